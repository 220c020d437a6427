"""What the docs name, for tests/docs/test_doc_claims.py: ``Docs.scan`` finds the references (variables,
paths, make targets, modules, options) in a Markdown doc's spans, blocks and links."""
from __future__ import annotations

import collections
import os
import re

import yaml

from tests.docs.doc_repository import ROOT, read, variable_prefixes

Ref = collections.namedtuple("Ref", "kind doc line text extra")


# Folders whose paths a doc may name; build/ is written at run time and not checked.
PATH_ROOTS = ("playbooks/", "roles/", "plugins/", "tests/", "docs/", "scripts/", "bench/", "inventories/",
              "molecule/", "changelogs/", "tools/", ".ci/", "meta/", "build/", "../shared/")
SHELL_LANGS = {"bash", "sh", "shell", "console", ""}
YAML_LANGS = {"yaml", "yml"}
FILE_EXT = r"(?:yml|yaml|py|md|json|fact|j2|txt|cfg|toml|sh|tgz)\b"


# --- what the docs name ---------------------------------------------------------------------------------

# docs/<name>.md pages named like a module that are not that module's page: docs/preflight.md is the host preflight
# (playbooks/driver_mode.yml); the preflight module's page is docs/hardening.md.
NOT_MODULE_DOCS = frozenset(("docs/preflight.md",))


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
            if doc.startswith("docs/") and doc not in NOT_MODULE_DOCS \
                    and os.path.exists(os.path.join(ROOT, "plugins", "modules", module_doc + ".py")):
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
