# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""The preflight's verdict (playbooks/checks.yml): every mistake of every enabled layer, one line each.

Private to the collection: not a public API. Pure: standard library only, no I/O.

The preflight (plugins/action/preflight.py) runs three kinds of checks before anything is written, and collects what
they find instead of stopping at the first:

- each enabled layer role's argument spec (meta/argument_specs.yml), as Ansible would check it when the role starts;
  ``spec_error`` words what Ansible's validator found as the collection words its own errors;
- each module's request: the options a role's task gives a module, checked by the module's own request builder (the
  same function the module calls first, ``request()``); ``fields_from`` and ``rename`` say each mistake under the
  inventory variable the option's value came from;
- the layers' own plans and values (the filters a role's preflight runs).

Every line reads ``<variable>: <what is wrong>. Fix: <how>``.
"""

from __future__ import annotations

import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import GpuPlatformError, ParamError

# Names in a template that are not the inventory's variables.
NOT_VARIABLES = frozenset(("omit", "item", "none", "true", "false", "None", "True", "False", "lookup", "query", "q",
                           "range", "dict", "hostvars", "groups", "inventory_hostname", "playbook_dir", "role_path",
                           "inventory_dir", "loop", "vars"))

_TYPE_WORDS = {"str": "a string", "int": "a whole number", "float": "a number", "bool": "true or false",
               "list": "a list", "dict": "a dictionary", "path": "a path", "raw": "a value", "bytes": "a size",
               "bits": "a size", "jsonarg": "JSON", "json": "JSON"}


def split(error):
    """The mistakes an error stands for: the parts of a combined error (validate.every), else the error itself."""
    parts = getattr(error, "parts", None)
    if parts:
        return [single for part in parts for single in split(part)]
    return [error]


def line(error):
    """One line of the verdict: the error's message, its white space (newlines) collapsed."""
    return " ".join(str(error.msg if isinstance(error, GpuPlatformError) else error).split())


_FIELD = re.compile(r"^([\w.\[\]-]+): ")


def _field(text):
    match = _FIELD.match(text)
    return match.group(1) if match else None


def verdict(errors):
    """The lines of every mistake in ``errors`` (errors or lines), in the order found, one per mistake: a line
    whose variable (or the path under one) an earlier line named already is left out (the argument spec's "is
    not a dictionary" says all there is about that variable), and so are the lines of the checks' own
    variables (``_x``: a consequence of a mistake named elsewhere) when there are others."""
    lines = []
    for error in errors:
        for single in split(error) if isinstance(error, GpuPlatformError) else [error]:
            lines.append(line(single))
    out, named = [], []
    for text in lines:
        field = _field(text)
        if not text or text in out or (field and any(_under(field, seen) is not None for seen in named)):
            continue
        out.append(text)
        if field:
            named.append(field)
    public_lines = [text for text in out if not (_field(text) or "").startswith("_")]
    return public_lines or out


def _under(field, path):
    """What follows ``path`` in ``field`` ('' for the path itself), or None when ``field`` is not ``path`` or under it."""
    if field == path:
        return ""
    if field.startswith(path + ".") or field.startswith(path + "["):
        return field[len(path):]
    return None


def rename(error, fields):
    """``error`` under the inventory's name for its field: ``fields`` maps option paths (``ip_range``, ``selectors``,
    ``nodes[0].selector``) to variables; the longest path the field is, or is under, wins (``selectors.vendors`` with
    ``selectors`` -> ``network_operator_selectors`` becomes ``network_operator_selectors.vendors``). Errors that are
    not a ParamError, or whose field no path covers, are returned as they are."""
    if not isinstance(error, ParamError) or not fields:
        return error
    best = None
    for path, variable in fields.items():
        rest = _under(error.field, path)
        if rest is not None and variable and (best is None or len(path) > len(best[0])):
            best = (path, variable + rest)
    if best is None or best[1] == error.field:
        return error
    return ParamError(best[1], error.problem, error.fix)


_EXPRESSION = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.S)
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYWORDS = frozenset(("if", "else", "elif", "endif", "for", "endfor", "in", "not", "and", "or", "is", "set", "recursive",
                       "true", "false", "none", "True", "False", "None", "with", "endwith", "block", "endblock"))


def template_names(text):
    """The variable names a Jinja template uses, in the order it uses them ([] for plain text): words of its
    expressions that are not attributes (``x.name``), filters or tests (``| default``, ``is defined``), functions
    (``dict(...)``), keyword arguments (``default(omit, true)`` keeps ``omit``; ``recursive=true`` drops
    ``recursive``), string literals or Jinja's keywords."""
    if not isinstance(text, str):
        return []
    out = []
    for match in _EXPRESSION.finditer(text):
        body = _STRING.sub("''", match.group(1) if match.group(1) is not None else match.group(2))
        for word in _WORD.finditer(body):
            name, before, after = word.group(), body[:word.start()].rstrip(), body[word.end():].lstrip()
            if name in _KEYWORDS or before.endswith((".", "|")) or re.search(r"\bis(\s+not)?$", before):
                continue
            if (after.startswith("=") and not after.startswith("==")) or after.startswith("("):
                continue  # a keyword argument's name, or a function's (dict(...), lookup(...))
            if before and before[-1].isalnum() and not re.search(r"\b(if|else|in|and|or|not)$", before):
                continue  # a digit run's tail, such as 1e5
            if name not in out:
                out.append(name)
    return out


def public(names):
    """The inventory variables among the names a template uses: not private (``_x``), Ansible's own or Jinja's."""
    return [n for n in names if n and not n.startswith("_") and not n.startswith("ansible_") and n not in NOT_VARIABLES]


def pick_variable(option, names):
    """The inventory variable an option's value comes from, given the names its template uses in order: the one whose
    name ends with the option's (``node_affinity`` -> ``network_operator_node_affinity`` over
    ``network_operator_all_nodes``), else the first; None when the template uses none."""
    candidates = public(names)
    last = re.split(r"[.\[\]]", option.rstrip("]"))[-1] or option
    for name in candidates:
        if name == last or name.endswith("_" + last):
            return name
    return candidates[0] if candidates else None


def leaves(raw, path=""):
    """(path, value) for every leaf of a nested structure of options (``nodes[0].selector``); a string, number or
    other scalar is a leaf."""
    if isinstance(raw, dict):
        for key, value in raw.items():
            yield from leaves(value, "%s.%s" % (path, key) if path else str(key))
    elif isinstance(raw, (list, tuple)):
        for index, value in enumerate(raw):
            yield from leaves(value, "%s[%d]" % (path, index))
    else:
        yield path, raw


def fields_from(raw, prefix=""):
    """{option path: inventory variable} for the options ``raw`` holds as its templates (a role's request variable,
    untemplated). A path whose template uses no inventory variable is not in the result."""
    out = {}
    for path, value in leaves(raw):
        variable = pick_variable(path, template_names(value)) if isinstance(value, str) else None
        if variable:
            out[prefix + path] = variable
    return out


# Ansible's argument spec validator (ansible.module_utils.common.arg_spec), its messages by error kind.
_MISSING = re.compile(r"^missing required arguments: (?P<names>.+?)(?: found in (?P<path>\S+))?$")
_UNSUPPORTED = re.compile(r"^(?P<path>\S+)\. Supported parameters include: (?P<names>.+?)\.?$")
_TYPE = re.compile(r"^argument '(?P<path>[^']+)' is of type (?P<got>\S+)(?: found in '(?P<where>[^']+)')?"
                   r" and we were unable to convert to (?P<want>\w+)")
_ELEMENTS = re.compile(r"^Elements value for option '(?P<path>[^']+)'(?: found in '(?P<where>[^']+)')? is of type "
                       r"(?P<got>\S+) and we were unable to convert to (?P<want>\w+)")
_CHOICES = re.compile(r"^value of (?P<path>\S+) must be one of: (?P<choices>.+), got: (?P<got>.*?)"
                      r"(?: found in (?P<where>\S+))?$")
_LIST_CHOICES = re.compile(r"^value of (?P<path>\S+) must be one or more of: (?P<choices>.+)\. Got no match for: "
                           r"(?P<got>.*?)(?: found in (?P<where>\S+))?$")


def option_spec(spec, path):
    """The spec of the option at ``path`` (``a.b``; list indexes ignored) in an argument spec; {} when unknown."""
    node = {"options": spec}
    for part in re.sub(r"\[\d+\]", "", path).split("."):
        node = (node.get("options") or {}).get(part) or {}
    return node


_PLURALS = {"str": "strings", "int": "whole numbers", "float": "numbers", "bool": "true or false values",
            "list": "lists", "dict": "dictionaries", "path": "paths"}


def _kind_words(spec):
    kind = spec.get("type") or "str"
    if kind == "list" and spec.get("elements"):
        return "a list of %s" % _PLURALS.get(spec["elements"], spec["elements"])
    return _TYPE_WORDS.get(kind, kind)


def _choices(spec):
    return ", ".join(str(c) for c in spec.get("choices") or [])


def _path(match):
    """The option a finding is about: its path, under the option it was found in (a sub-option)."""
    where = match.groupdict().get("where")
    return "%s.%s" % (where, match.group("path")) if where else match.group("path")


def spec_error(kind, message, spec, field, doc=""):
    """A ParamError from one finding of Ansible's argument spec validator: ``kind`` is its class name
    (RequiredError, ArgumentTypeError, ...), ``message`` its message, ``spec`` the argument spec checked and
    ``field`` the option it belongs to (the path the message names is used when it has one). ``doc`` is where the
    option is described, for a fix that has nothing better to say."""
    text = " ".join(str(message).split())
    see = "see its description%s" % (" (%s)" % doc if doc else "")
    match = _MISSING.match(text)
    if match:
        path = match.group("path") or field
        names = match.group("names")
        wanted = [n for n, s in (option_spec(spec, path).get("options") or {}).items() if s.get("required")]
        if match.group("path"):
            return ParamError(path, "an entry has no %s" % names,
                              "give every entry %s" % ", ".join(wanted or names.split(", ")))
        return ParamError(path, "%s is required" % names, "set it; %s" % see)
    match = _UNSUPPORTED.match(text)
    if match and kind == "UnsupportedError":
        return ParamError(match.group("path"), "is not a known key", "use only %s" % match.group("names"))
    match = _CHOICES.match(text) or _LIST_CHOICES.match(text)
    if match:
        return ParamError(_path(match), "%r is not one of %s" % (match.group("got"), match.group("choices")),
                          "use one of %s" % match.group("choices"))
    match = _ELEMENTS.match(text)
    if match:
        got, want = match.group("got"), _TYPE_WORDS.get(match.group("want"), match.group("want"))
        return ParamError(_path(match), "has an element of type %s, not %s" % (got, want),
                          "give %s" % _kind_words(option_spec(spec, _path(match))))
    match = _TYPE.match(text)
    if match:
        got, want = match.group("got"), _TYPE_WORDS.get(match.group("want"), match.group("want"))
        wanted = option_spec(spec, _path(match))
        choices = " (one of %s)" % _choices(wanted) if wanted.get("choices") else ""
        return ParamError(_path(match), "is of type %s, not %s" % (got, want),
                          "give %s%s" % (_kind_words(wanted), choices))
    return ParamError(field, text.rstrip("."), see)


def value_error(name, error):
    """A mistake found while the preflight evaluated the variable ``name``: the collection's own errors as they are;
    anything else (a template of the inventory's that does not evaluate) named after the variable."""
    if isinstance(error, GpuPlatformError):
        return error
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return ParamError(name, "cannot be evaluated (%s)" % first,
                      "correct the template, or the variables it uses")
