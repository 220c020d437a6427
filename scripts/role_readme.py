"""Write (or, with --check, verify) each role's README.md from its meta/argument_specs.yml.

    python scripts/role_readme.py            # regenerate every roles/*/README.md
    python scripts/role_readme.py --check    # exit 1 if any README differs from its specs
"""
import os
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cell(value):
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def default_text(spec):
    if "default" not in spec:
        return "required" if spec.get("required") else ""
    value = spec["default"]
    return "`%s`" % (yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip() if not isinstance(value, str) else (value or '""'))


def render(role):
    with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        main = yaml.safe_load(handle)["argument_specs"]["main"]
    lines = ["# Role gpu_platform.cluster.%s" % role, "",
             "<!-- Generated from meta/argument_specs.yml by scripts/role_readme.py; edit the specs, not this file. -->", "",
             cell(main.get("short_description", "")), ""]
    lines += [cell(d) + "\n" for d in (main.get("description") or [])]
    lines += ["## Variables", "", "| variable | type | default | description |", "|---|---|---|---|"]
    for name, spec in main["options"].items():
        kind = spec.get("type", "str") + ("/" + spec["elements"] if spec.get("elements") else "")
        desc = cell(spec.get("description", ""))
        if spec.get("choices"):
            desc += " Choices: %s." % ", ".join("`%s`" % c for c in spec["choices"])
        lines.append("| `%s` | %s | %s | %s |" % (name, kind, cell(default_text(spec)), desc))
    lines += ["", "## Use", "", "```yaml", "- name: %s layer" % role, "  hosts: k8s_api", "  roles:",
              "    - role: gpu_platform.cluster.%s" % role, "```", ""]
    return "\n".join(lines)


def main():
    check = "--check" in sys.argv
    stale = []
    for role in sorted(os.listdir(os.path.join(ROOT, "roles"))):
        path = os.path.join(ROOT, "roles", role, "README.md")
        text = render(role)
        current = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if current != text:
            stale.append(path)
            if not check:
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(text)
    if check and stale:
        sys.exit("out of date with meta/argument_specs.yml: %s (run python scripts/role_readme.py)" % ", ".join(stale))


if __name__ == "__main__":
    main()
