"""What the repository has, for tests/docs/test_doc_claims.py: role variables and the names roles and playbooks
read, files, make targets, module options and return keys, filters; and ``Repo.check`` of one reference
against them."""
from __future__ import annotations

import ast
import fnmatch
import glob
import os
import re

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))

# Inventory names the docs use for the reader's own inventory (a copy of inventories/aks or inventories/baremetal):
# examples of a file the reader makes, not files of the repository.
READERS_INVENTORIES = {"prod", "my-aks"}


def read(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return handle.read()


def load_yaml(*parts):
    return yaml.safe_load(read(*parts)) or {}


# --- what the repository has ---------------------------------------------------------------------------

ROLES = sorted(d for d in os.listdir(os.path.join(ROOT, "roles")) if os.path.isdir(os.path.join(ROOT, "roles", d)))


def platform_vars():
    """The platform contract's variables (roles/gpu_platform)."""
    return set(load_yaml("roles", "gpu_platform", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"])


def defined_variables():
    names = set(platform_vars())
    for role in ROLES:
        names.update(load_yaml("roles", role, "defaults", "main.yml"))
        specs = load_yaml("roles", role, "meta", "argument_specs.yml").get("argument_specs") or {}
        for entry in specs.values():
            names.update(entry.get("options") or {})
    return names


def variable_prefixes():
    """gpu_platform_ (the platform contract's variables, roles/gpu_platform) and each role's
    own prefix: the role name, which starts every key of its defaults/main.yml."""
    prefixes = {"gpu_platform_"}
    assert any(name.startswith("gpu_platform_") for name in platform_vars())
    for role in ROLES:
        keys = load_yaml("roles", role, "defaults", "main.yml")
        if keys and all(key.startswith(role + "_") for key in keys):
            prefixes.add(role + "_")
    return tuple(sorted(prefixes, key=len, reverse=True))


def identifiers_read():
    """Every identifier read in roles/ and playbooks/: in an expression, a condition or a value, not as a YAML key
    (not their Markdown either: role READMEs are generated from the specs)."""
    names = set()
    for top in ("roles", "playbooks"):
        for folder, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith(".md"):
                    continue
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                    # a YAML key (``name:``) is a module option or a structure's field, not a read of a variable
                    names.update(re.findall(r"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_]|\s*:(?!:))",
                                            handle.read()))
    return names


def repository_files():
    """Every file's path in the checkout, without what make and the runs create (build/, .venv/, tools/bin/)."""
    skip = {".git", ".venv", "build", "node_modules", "__pycache__", ".pytest_cache"}
    paths = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in skip and os.path.relpath(os.path.join(folder, d), ROOT) != "tools/bin"]
        paths.extend(os.path.relpath(os.path.join(folder, name), ROOT) for name in files)
    return paths


def make_targets():
    targets = set()
    for line in read("Makefile").splitlines():
        match = re.match(r"^([A-Za-z0-9_.%/$() -]+?)\s*:(?![=:])", line)
        if match and not line.startswith("\t"):
            targets.update(t for t in match.group(1).split() if not t.startswith("$"))
    return targets - {".PHONY"}


def python_string(path, name, in_class=False):
    """The string literal assigned to ``name`` at module level (or in a class), found without importing."""
    tree = ast.parse(read(path))
    nodes = tree.body
    if in_class:
        nodes = [n for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body]
    for node in nodes:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return node.value.value
    return None


def option_names(options):
    names = set()
    for key, spec in (options or {}).items():
        names.add(key)
        names.update((spec or {}).get("aliases") or [])
    return names


def module_docs():
    """Module name -> (options {name: spec}, option names and aliases, return keys)."""
    modules = {}
    for path in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py")):
        name = os.path.splitext(os.path.basename(path))[0]
        doc = yaml.safe_load(python_string(path, "DOCUMENTATION"))
        options = dict(doc.get("options") or {})
        for fragment in doc.get("extends_documentation_fragment") or []:
            parts = fragment.split(".")
            assert parts[:2] == ["gpu_platform", "cluster"], "%s: fragment %s is not the collection's" % (name, fragment)
            var = parts[3].upper() if len(parts) > 3 else "DOCUMENTATION"
            text = python_string(os.path.join("plugins", "doc_fragments", parts[2] + ".py"), var, in_class=True)
            assert text, "%s: doc fragment %s not found" % (name, fragment)
            options.update(yaml.safe_load(text).get("options") or {})
        returned = yaml.safe_load(python_string(path, "RETURN") or "") or {}
        modules[name] = (options, option_names(options), set(returned))
    return modules


def filter_names():
    names = {os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(ROOT, "plugins", "filter", "*.yml"))}
    for path in glob.glob(os.path.join(ROOT, "plugins", "filter", "*.py")):
        tree = ast.parse(read(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "filters":
                for ret in ast.walk(node):
                    if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Dict):
                        names.update(k.value for k in ret.value.keys if isinstance(k, ast.Constant))
    return names


class Repo:
    def __init__(self):
        self.variables = defined_variables()
        self.read = identifiers_read()
        self.targets = make_targets()
        self.modules = module_docs()
        self.filters = filter_names()
        self.files = repository_files()

    def variable(self, name):
        if "*" not in name and not name.endswith("_"):
            if name in self.variables:
                return None
            if name in self.read:
                return None
            if any(name in names for _options, names, _returned in self.modules.values()):
                return None  # an option of a module (nic_cluster_policy's network_operator_version), named as such
            return "no role defaults or argument spec defines it, and nothing in roles/ or playbooks/ reads it"
        pattern = re.escape(name).replace(r"\*", "[a-z0-9_]*") + ("[a-z0-9_]+" if name.endswith("_") else "")
        if any(re.fullmatch(pattern, known_name) for known_name in self.variables):
            return None
        return "no defined variable matches the family %s" % name

    @staticmethod
    def path(path):
        if path.startswith("build/"):
            return None  # written by make/the playbooks at run time
        if path.split("/")[:2][-1] in READERS_INVENTORIES and path.startswith("inventories/"):
            return None  # the reader's own copy of a shipped inventory, in the docs' examples
        if path.startswith("../shared/") and not os.path.isdir(SHARED):
            return None  # the shared data folder beside the checkout is absent on this machine
        path, _sep, test = path.partition("::")
        pattern = re.sub(r"<[^>]*>", "*", path.rstrip("/")).replace("...", "**")
        if path.startswith("meta/"):
            candidates = [pattern, "roles/*/" + pattern]  # the collection's meta/ or a role's
        else:
            candidates = [pattern]
        matches = [m for c in candidates for m in glob.glob(os.path.join(ROOT, c), recursive=True)]
        if not matches:
            return "no such file or folder in the repository"
        if test:
            name = test.split("::")[-1].split("[")[0]
            if not any(re.search(r"^\s*def %s\(" % re.escape(name), read(m), re.M) for m in matches if os.path.isfile(m)):
                return "%s has no test %s" % (path, name)
        return None

    def file_name(self, name):
        """A file named without its folder (``site.yml``, ``group_vars/all/platform.yml``, ``runtime_restore.yml``)
        must be some file of the repository whose path ends that way. Only the repository's own kinds of file
        count (.yml, not the .yaml/.json the playbooks write into a bundle)."""
        pattern = re.sub(r"<[^>]*>", "*", name)
        if any(fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path, "*/" + pattern) for path in self.files):
            return None
        return "no file of the repository is %s" % name

    def make(self, target):
        return None if target in self.targets else "the Makefile has no target %s" % target

    def fqcn(self, name):
        if name in self.modules or name in ROLES or name in self.filters:
            return None
        if os.path.isfile(os.path.join(ROOT, "playbooks", name + ".yml")):
            return None  # a playbook of the collection (gpu_platform.cluster.site)
        return "no module plugins/modules/%s.py, no role roles/%s, no filter and no playbook of that name" % (name, name)

    def option(self, option, module):
        if module not in self.modules:
            return "no module %s" % module
        if option in self.modules[module][1]:
            return None
        return "%s has no option %s" % (module, option)

    def module_doc_option(self, name, module):
        _options, names, returned = self.modules[module]
        if name in names or name in returned:
            return None
        return "%s has no option or return value %s" % (module, name)

    def check(self, ref):
        if ref.kind in ("variable", "yaml variable"):
            return self.variable(ref.text)
        if ref.kind == "path":
            return self.path(ref.text)
        if ref.kind == "file name":
            return self.file_name(ref.text)
        if ref.kind == "make":
            return self.make(ref.text)
        if ref.kind == "fqcn":
            return self.fqcn(ref.text)
        if ref.kind == "option":
            return self.option(ref.text, ref.extra)
        if ref.kind == "module doc option":
            return self.module_doc_option(ref.text, ref.extra)
        if ref.kind == "yaml":
            return None if ref.extra is None else "the YAML example does not parse: %s" % ref.extra
        raise AssertionError(ref.kind)
