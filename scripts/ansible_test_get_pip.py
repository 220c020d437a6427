"""Offline stand-in for the get-pip bootstrap script that ansible-test downloads.

ansible-test creates a virtual environment per sanity test without pip, then runs a
get-pip script fetched from ci-files.testing.ansible.com, which this project's machines
cannot reach. This script does the same job from what is here: it installs the pip
bundled with Python (ensurepip), then lets that pip install the requested pip version and
packages from PyPI. ``make sanity-venv`` copies it to ansible-test's cache path.

ansible-test runs it with a filtered environment, which drops pip settings such as
PIP_CERT. ``make sanity-venv`` saves those settings beside this script (pip-settings.ini);
they are written into each new virtual environment's pip.conf, so every later pip run in
it (ansible-test installs each test's requirements there) sees them too.
"""
import configparser
import ensurepip
import os
import subprocess
import sys

GET_PIP_ONLY = {"--no-setuptools", "--no-wheel"}
SETTINGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pip-settings.ini")


def write_venv_pip_conf():
    if not os.path.exists(SETTINGS):
        return
    config = configparser.ConfigParser()
    config.read(SETTINGS)
    with open(os.path.join(sys.prefix, "pip.conf"), "w", encoding="utf-8") as handle:
        config.write(handle)


def main():
    write_venv_pip_conf()
    ensurepip.bootstrap(upgrade=True)
    # ensurepip points PIP_CONFIG_FILE at /dev/null and leaves it set; the pip.conf must count.
    env = {key: value for key, value in os.environ.items() if key != "PIP_CONFIG_FILE"}
    args = [arg for arg in sys.argv[1:] if arg not in GET_PIP_ONLY]
    sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", "--upgrade"] + args, env=env))


if __name__ == "__main__":
    main()
