"""Every checkable reference in README.md and docs/*.md names something the repository has.

A doc that names a variable, a path, a make target, a module, a filter or a module option that does
not exist fails here, with the doc, the line, the reference and what is missing. What is checked:

* variables: an identifier in backticks (or a top-level key of a ```yaml mapping, a play's or task's
  ``vars``, or ``-e name=...`` in a shell block) that starts with a collection prefix (``gpu_platform_``
  or a role's name and ``_``, from roles/*/defaults/main.yml) must be defined by a role's defaults or
  argument specs (the platform's: roles/gpu_platform), or be read somewhere in roles/ or playbooks/.
  ``*`` is a wildcard and a trailing ``_`` a prefix: such a family must match at least one name;
* paths: a backticked (or shell-block, or Markdown-link) path under one of the repository's folders must
  exist (``*`` and ``<placeholder>`` are globs that must match); ``tests/x.py::test_y`` also needs the test;
* ``make <target>``: a target of the Makefile;
* ``gpu_platform.cluster.<name>``: a module, a role or a filter;
* module options: every key under ``gpu_platform.cluster.<module>:`` in a ```yaml example must be an
  option (or alias) of the module, doc fragments included; and in docs/<module>.md every backticked
  ``snake_case`` name or ``key: value`` must be one of the module's options, aliases or return keys.

Run ``python -m tests.docs.test_doc_claims`` to print how many references of each kind are checked.
"""
from __future__ import annotations

import ast
import collections
import fnmatch
import glob
import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
DOCS = ["README.md"] + sorted(os.path.join("docs", name) for name in os.listdir(os.path.join(ROOT, "docs"))
                              if name.endswith(".md"))

Ref = collections.namedtuple("Ref", "kind doc line text extra")

# Folders whose paths a doc may name; build/ is written at run time and not checked.
PATH_ROOTS = ("playbooks/", "roles/", "plugins/", "tests/", "docs/", "scripts/", "bench/", "inventories/",
              "molecule/", "changelogs/", "tools/", ".ci/", "meta/", "build/", "../shared/")
# Inventory names the docs use for the reader's own inventory (a copy of inventories/aks or inventories/baremetal):
# examples of a file the reader makes, not files of the repository.
READERS_INVENTORIES = {"prod", "my-aks"}
SHELL_LANGS = {"bash", "sh", "shell", "console", ""}
YAML_LANGS = {"yaml", "yml"}
FILE_EXT = r"(?:yml|yaml|py|md|json|fact|j2|txt|cfg|toml|sh|tgz)\b"


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


# --- what the docs name ---------------------------------------------------------------------------------

def blocks_and_lines(text):
    """Yields ('text', lineno, line) for prose lines and ('block', lineno, lang, body) for fenced blocks
    (lineno of the block's first body line)."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^\s*(```+|~~~+)\s*([\w+-]*)", lines[i])
        if fence:
            marker, lang, start = fence.group(1), fence.group(2).lower(), i + 1
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                i += 1
            yield ("block", start + 1, lang, "\n".join(lines[start:i]))
            i += 1
            continue
        yield ("text", i + 1, lines[i])
        i += 1


def inline_spans(text):
    """(lineno, span) for every backticked span outside fenced blocks; a span may cross a line break."""
    spans = []
    prose = []
    for item in blocks_and_lines(text):
        if item[0] == "text":
            prose.append((item[1], item[2]))
        else:
            prose.append((item[1], ""))
    joined = "\n".join(line for _n, line in prose)
    starts = [n for n, _line in prose]
    offsets, pos = [], 0
    for _n, line in prose:
        offsets.append(pos)
        pos += len(line) + 1
    for match in re.finditer(r"(`+)(.+?)\1", joined, re.S):
        index = max(i for i, off in enumerate(offsets) if off <= match.start())
        spans.append((starts[index], " ".join(match.group(2).split())))
    return spans, prose


class Docs:
    def __init__(self):
        self.prefixes = variable_prefixes()
        self.refs = []

    def add(self, kind, doc, line, text, extra=None):
        self.refs.append(Ref(kind, doc, line, text, extra))

    def variables_in(self, doc, line, span):
        for match in re.finditer(r"(?<![\w./*-])(\*?[a-z][a-z0-9_*]*|\*_[a-z0-9_*]+)(?![\w/-])(?!\." + FILE_EXT + ")",
                                 span):
            token = match.group(1)
            if token.startswith("*_") or token.startswith(self.prefixes):
                if token.rstrip("_*") and any(token.startswith(p) and len(token) > len(p) for p in self.prefixes) \
                        or token.startswith("*_"):
                    self.add("variable", doc, line, token)

    def paths_in(self, doc, line, span, base=""):
        for word in re.split(r"[\s=,]+", span):
            word = word.strip("\"'(),;:`")
            if "://" in word:
                continue
            if base and not word.startswith(PATH_ROOTS):
                joined = os.path.normpath(os.path.join(base, word))
                if joined.startswith(PATH_ROOTS) or joined.startswith("../"):
                    word = joined
            if word.startswith("./"):
                word = word[2:]
            if word.startswith("shared/"):
                word = "../" + word  # the data folder beside the checkout, named as the design docs do
            word = re.sub(r":\d+$", "", word)  # file:line
            if word.startswith(PATH_ROOTS):
                self.add("path", doc, line, word)
            elif re.match(r"^[\w<>*.-][\w<>*./-]*\.(?:yml|py|cfg|txt|toml|md|j2|ini)$", word) and not base:
                self.add("file name", doc, line, word)

    def make_in(self, doc, line, span, shell=False):
        pattern = r"(?:^|&&|;|\|\||\$)\s*make\s+([^#;&|]*)" if shell else r"\bmake\s+([^#;&|]*)"
        for match in re.finditer(pattern, span):
            for word in match.group(1).split():
                if word.startswith("-") or "=" in word:
                    continue
                if not re.match(r"^[a-z][a-z0-9_.-]*$", word):
                    break
                self.add("make", doc, line, word)

    def collection_names_in(self, doc, line, span):
        for match in re.finditer(r"gpu_platform\.cluster\.([A-Za-z_][A-Za-z0-9_]*)", span):
            self.add("fqcn", doc, line, match.group(1))

    def yaml_block(self, doc, start, body):
        try:
            nodes = list(yaml.compose_all(body, Loader=yaml.SafeLoader))
        except yaml.YAMLError as exc:
            self.add("yaml", doc, start, body.splitlines()[0] if body else "", str(exc).replace("\n", " "))
            return
        self.add("yaml", doc, start, "block", None)
        for node in nodes:
            if isinstance(node, yaml.MappingNode):
                for key, _value in node.value:
                    self.yaml_variable(doc, start, key)
            self.walk_yaml(doc, start, node)

    def yaml_variable(self, doc, start, key):
        if isinstance(key, yaml.ScalarNode) and key.value.startswith(self.prefixes):
            self.add("yaml variable", doc, start + key.start_mark.line, key.value)

    def walk_yaml(self, doc, start, node):
        if isinstance(node, yaml.SequenceNode):
            for item in node.value:
                self.walk_yaml(doc, start, item)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else ""
                module = re.match(r"^gpu_platform\.cluster\.(\w+)$", name)
                if module and isinstance(value, yaml.MappingNode):
                    for option, _v in value.value:
                        self.add("option", doc, start + option.start_mark.line, option.value, module.group(1))
                if name == "vars" and isinstance(value, yaml.MappingNode):
                    for var, _v in value.value:
                        self.yaml_variable(doc, start, var)
                self.walk_yaml(doc, start, value)

    def scan(self, doc, text=None):
        text = read(doc) if text is None else text
        base = os.path.dirname(doc)
        spans, prose = inline_spans(text)
        module_doc = os.path.splitext(os.path.basename(doc))[0]
        for line, span in spans:
            self.variables_in(doc, line, span)
            self.paths_in(doc, line, span)
            self.make_in(doc, line, span)
            if doc.startswith("docs/") and os.path.exists(os.path.join(ROOT, "plugins", "modules", module_doc + ".py")):
                option = re.match(r"^([a-z][a-z0-9]*_[a-z0-9_]+)(?:$|: )|^([a-z][a-z0-9_]*): ", span)
                if option:
                    self.add("module doc option", doc, line, option.group(1) or option.group(2), module_doc)
        for line, content in prose:
            for match in re.finditer(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", content):
                if "://" not in match.group(1):
                    self.paths_in(doc, line, match.group(1), base=base)
        for item in blocks_and_lines(text):
            if item[0] == "text":
                self.collection_names_in(doc, item[1], item[2])
                continue
            _kind, start, lang, body = item
            for offset, content in enumerate(body.splitlines()):
                self.collection_names_in(doc, start + offset, content)
                if lang in SHELL_LANGS:
                    self.make_in(doc, start + offset, content, shell=True)
                    if lang:
                        command = content.split("#", 1)[0]
                        self.paths_in(doc, start + offset, command)
                        for var in re.findall(r"(?:-e|--extra-vars)\s+['\"]?([a-z][a-z0-9_]*)=", command):
                            if var.startswith(self.prefixes):
                                self.add("variable", doc, start + offset, var)
            if lang in YAML_LANGS:
                self.yaml_block(doc, start, body)


# --- the checks -----------------------------------------------------------------------------------------

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


_CACHE = {}


def scanned():
    if "docs" not in _CACHE:
        docs = Docs()
        for doc in DOCS:
            docs.scan(doc)
        _CACHE["docs"] = docs.refs
        _CACHE["repo"] = Repo()
    return _CACHE["docs"], _CACHE["repo"]


def failures(doc=None):
    refs, repo = scanned()
    found = []
    for ref in refs:
        if doc is not None and ref.doc != doc:
            continue
        problem = repo.check(ref)
        if problem:
            found.append("%s:%d: %s `%s`: %s" % (ref.doc, ref.line, ref.kind, ref.text, problem))
    return found


@pytest.mark.parametrize("doc", DOCS)
def test_every_reference_in_the_doc_exists(doc):
    found = failures(doc)
    assert not found, "%d stale reference(s):\n%s" % (len(found), "\n".join(found))


def test_the_scanner_finds_each_kind_of_reference():
    """A scanner that silently finds nothing would pass every doc: each kind must be seen, and known ones found."""
    refs, _repo = scanned()
    kinds = collections.Counter(ref.kind for ref in refs)
    for kind in ("variable", "yaml variable", "path", "make", "fqcn", "option", "module doc option", "yaml"):
        assert kinds[kind] > 0, "no %s reference found in the docs" % kind
    seen = {(ref.kind, ref.doc, ref.text) for ref in refs}
    assert ("make", "README.md", "demo") in seen
    assert ("fqcn", "README.md", "helm_pinned_release") in seen
    assert ("option", "README.md", "chart_version") in seen
    assert ("path", "README.md", "playbooks/smoke.yml") in seen
    assert ("variable", "README.md", "gpu_platform_image_mirrors") in seen


@pytest.mark.parametrize("ref, problem", [
    (Ref("variable", "x", 1, "gpu_operator_no_such_thing", None), "nothing in roles/"),
    (Ref("variable", "x", 1, "*_no_such_family", None), "no defined variable matches"),
    (Ref("variable", "x", 1, "gpu_operator_chart_*", None), None),
    (Ref("variable", "x", 1, "*_image_mirrors", None), None),
    (Ref("path", "x", 1, "playbooks/nope.yml", None), "no such file"),
    (Ref("path", "x", 1, "roles/*/defaults/main.yml", None), None),
    (Ref("path", "x", 1, "tests/docs/test_doc_claims.py::test_nope", None), "has no test"),
    (Ref("make", "x", 1, "nope", None), "no target"),
    (Ref("fqcn", "x", 1, "nope", None), "no module"),
    (Ref("fqcn", "x", 1, "image_mirror", None), None),
    (Ref("option", "x", 1, "chart_versoin", "helm_pinned_release"), "no option"),
    (Ref("option", "x", 1, "kubeconfig", "helm_pinned_release"), None),
])
def test_the_checks_tell_stale_from_real(ref, problem):
    _refs, repo = scanned()
    result = repo.check(ref)
    if problem is None:
        assert result is None
    else:
        assert result and problem in result


def test_the_scanner_reads_spans_blocks_and_links():
    docs = Docs()
    text = ("Set `gpu_operator_wait: false` and `*_extra_values`, see [x](../playbooks/site.yml).\n"
            "```bash\nmake demo && ansible-playbook -i inventories/local playbooks/smoke.yml -e gpu_platform_x=1\n```\n"
            "```yaml\ngpu_sharing_pools: []\n- bad\n```\n")
    docs.scan("docs/probe.md", text)
    got = {(r.kind, r.text) for r in docs.refs}
    assert {("variable", "gpu_operator_wait"), ("variable", "*_extra_values"), ("path", "playbooks/site.yml"),
            ("make", "demo"), ("path", "inventories/local"), ("path", "playbooks/smoke.yml"),
            ("variable", "gpu_platform_x")} <= got
    assert [r for r in docs.refs if r.kind == "yaml" and r.extra], "an unparsable YAML example is reported"


if __name__ == "__main__":
    REFS, REPO = scanned()
    print(collections.Counter(ref.kind for ref in REFS))
    for message in failures():
        print(message)
