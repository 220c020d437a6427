"""Print this environment's pip settings (PIP_* variables) as a pip.conf [global] section."""
import configparser
import os
import sys

config = configparser.ConfigParser()
config["global"] = {key[4:].lower().replace("_", "-"): value
                    for key, value in sorted(os.environ.items()) if key.startswith("PIP_")}
config.write(sys.stdout)
