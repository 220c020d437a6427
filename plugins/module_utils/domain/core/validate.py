# -*- coding: utf-8 -*-
# Copyright: gpu_platform.cluster contributors
# Apache License 2.0 (see LICENSE)
"""Validators for Kubernetes names, labels, versions and durations.

Private to the collection: not a public API. Pure: standard library only.
Each validator raises ParamError naming the field and the fix.
"""

from __future__ import annotations

import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.core import version_parse
from ansible_collections.gpu_platform.cluster.plugins.module_utils.errors import ParamError

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
DURATION_PART = re.compile(r"(\d+)(h|m|s)")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
# An image reference, after the distribution/reference grammar (docker/distribution reference/regexp.go):
# [domain[:port]/]path[:tag][@algorithm:hex].
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = r"(?:%s(?:\.%s)*(?::[0-9]+)?)" % (_DOMAIN_PART, _DOMAIN_PART)
_PATH_PART = r"(?:[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)"
IMAGE_REFERENCE = re.compile(
    r"^(?P<name>(?:%s/)?%s(?:/%s)*)(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$"
    % (_DOMAIN, _PATH_PART, _PATH_PART))
EXAMPLE_IMAGE = "nvcr.io/nvidia/cuda:12.9.1-base-ubuntu24.04"


def every(checks, what="settings"):
    """Run each check (a callable returning a value) and return their values; if any raises ParamError, raise one
    ParamError that names every failed field with its problem and fix, so a user fixes them all in one go (its
    ``parts``: the errors one by one)."""
    found = Mistakes(what)
    values = [found.check(check) for check in checks]
    found.raise_any()
    return values


class Mistakes:
    """Checks run one after another, each mistake kept instead of stopping at the first: ``check(func)`` returns
    ``func()``, or ``fallback`` after a ParamError (a later check that needs the value is then left out);
    ``raise_any()`` raises the one mistake, or one ParamError naming them all (its ``parts``: one by one)."""

    def __init__(self, what="settings"):
        self.what = what
        self.errors = []

    def check(self, func, fallback=None):
        try:
            return func()
        except ParamError as exc:
            self.errors.append(exc)
            return fallback

    def raise_any(self):
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            fields = ", ".join(e.field for e in self.errors)
            combined = ParamError(fields, "%d %s are wrong: %s" % (
                len(self.errors), self.what, "; ".join(e.msg for e in self.errors)), "correct each as said above")
            combined.parts = list(self.errors)  # each mistake on its own, for the preflight's one line per mistake
            raise combined


def given(params, suboptions=()):
    """The options the user gave: AnsibleModule fills unset options (and the unset keys of the
    ``suboptions`` dicts) with None, and the domain's defaults apply only to options left out."""
    out = {k: v for k, v in params.items() if v is not None}
    for name in suboptions:
        if isinstance(out.get(name), dict):
            out[name] = {k: v for k, v in out[name].items() if v is not None}
    return out


def boolean(field, value):
    """``value`` when it is true or false; else a ParamError naming ``field``."""
    if not isinstance(value, bool):
        raise ParamError(field, "%r is not true or false" % (value,), "set it to true or false")
    return value


def dns_label(field, value, max_len=63):
    """A DNS-1123 label such as a namespace name."""
    if not isinstance(value, str) or not value:
        raise ParamError(field, "is empty", "give a lower-case DNS-1123 name such as gpu-operator")
    if len(value) > max_len or not DNS1123_LABEL.match(value):
        raise ParamError(
            field, "%r is not a valid name (lower-case letters, digits and '-', at most %d characters, "
            "starting and ending with a letter or digit)" % (value, max_len),
            "use a name such as gpu-operator")
    return value


def secret_names(field, value):
    """A list of image pull Secret names (DNS-1123 subdomains) as a tuple; errors name ``field[i]``."""
    if value in (None, ""):
        return ()
    if not isinstance(value, (list, tuple)):
        raise ParamError(field, "%r is not a list of Secret names" % (value,), "give a list such as [ngc-pull]")
    names = []
    for index, name in enumerate(value):
        if not isinstance(name, str) or not name or len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
            raise ParamError("%s[%d]" % (field, index), "%r is not a Secret name" % (name,),
                             "use lower-case letters, digits, '-' and '.', such as ngc-pull")
        names.append(name)
    return tuple(names)


def release_name(field, value):
    """Helm's own rule: a DNS-1123 subdomain of at most 53 characters."""
    if not isinstance(value, str) or not value:
        raise ParamError(field, "is empty", "give a release name such as gpu-operator")
    if len(value) > 53 or not DNS1123_SUBDOMAIN.match(value):
        raise ParamError(
            field, "%r is not a valid Helm release name (lower-case DNS-1123, at most 53 characters)" % value,
            "use lower-case letters, digits, '-' and '.', such as gpu-operator")
    return value


def label_key(field, key):
    prefix, dummy, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        raise ParamError(field, "label key %r has an invalid prefix %r" % (key, prefix),
                         "use a DNS subdomain prefix such as pod-security.kubernetes.io/")
    if not name or len(name) > 63 or not LABEL_NAME.match(name):
        raise ParamError(field, "label key %r is not a valid Kubernetes label name" % key,
                         "use at most 63 characters: letters, digits, '-', '_' and '.'")


def labels(field, value):
    """A dict of Kubernetes labels; values are strings (booleans are refused, not guessed)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ParamError(field, "must be a dictionary of label keys to values", "give key: value pairs")
    out = {}
    for key, val in value.items():
        label_key(field, str(key))
        if not isinstance(val, str):
            raise ParamError(field, "the value of label %r is %r, not a string" % (key, val),
                             "quote it, e.g. %s: \"%s\"" % (key, str(val).lower()))
        if len(val) > 63 or not LABEL_VALUE.match(val):
            raise ParamError(field, "label %r has an invalid value %r" % (key, val),
                             "use at most 63 characters: letters, digits, '-', '_' and '.'")
        out[str(key)] = val
    return out


def exact_version(field, value):
    """An exact chart version: no ranges, no 'latest', no empty string."""
    text = "" if value is None else str(value).strip()
    if not text:
        raise ParamError(field, "is required and empty", "pin an exact chart version such as v26.7.0")
    if text.lower() in ("latest", "stable", "devel", "*"):
        raise ParamError(field, "%r is not a version; every chart is pinned" % text,
                         "pin an exact chart version such as v26.7.0")
    if not version_parse.is_exact_version(text):
        raise ParamError(field, "%r is not an exact version (ranges and partial versions are refused)" % text,
                         "pin an exact semantic version such as 1.2.3, v26.7.0 or 1.0.0-rc.1")
    return text


def duration_seconds(field, value):
    """Seconds from an int or a Go-style duration ("300", "5m", "1m30s")."""
    if isinstance(value, bool):
        raise ParamError(field, "%r is not a duration" % value, "give seconds (300) or a duration such as 5m")
    if isinstance(value, int):
        seconds = value
    else:
        text = str(value).strip()
        if text.isdigit():
            seconds = int(text)
        else:
            parts = DURATION_PART.findall(text)
            if not parts or "".join(n + u for n, u in parts) != text:
                raise ParamError(field, "%r is not a duration" % value, "give seconds (300) or a duration such as 5m or 1m30s")
            seconds = sum(int(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)
    if seconds <= 0:
        raise ParamError(field, "must be greater than zero", "give a positive duration such as 300 or 5m")
    return seconds


# Flux's CRDs take intervals and time-outs as Go durations (their schema's pattern).
GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$")
_GO_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def go_duration(field, value, minimum=1, maximum=7 * 24 * 3600):
    """A Go duration string as Flux's CRDs take it (``10m``, ``1h30m``, ``90s``), between ``minimum`` and
    ``maximum`` seconds; returns it stripped."""
    text = "" if value is None or isinstance(value, bool) else str(value).strip()
    if not GO_DURATION.match(text):
        raise ParamError(field, "%r is not a duration" % (str(value)[:100],),
                         "give a Go duration such as 10m, 1h or 90s (units ms, s, m, h)")
    seconds = sum(float(n) * _GO_UNITS[u] for n, dummy, u in re.findall(r"([0-9]+(\.[0-9]+)?)(ms|s|m|h)", text))
    if not minimum <= seconds <= maximum:
        raise ParamError(field, "%s is %g seconds, outside %g to %g" % (text, seconds, minimum, maximum),
                         "give a duration between %ds and %dh" % (minimum, maximum // 3600))
    return text


def url_without_credentials(field, url):
    """``url`` unchanged when it holds no user name or password; else refused without echoing them."""
    text = str(url or "").strip()
    match = re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://([^/?#]*)", text)
    if match and "@" in match.group(1):
        raise ParamError(field, "the URL holds credentials (user:password@), which would be written into the "
                         "GitOps bundle, results and logs",
                         "give the URL without them; for a private repository, mirror it to one the cluster "
                         "reaches without credentials, or create the Flux source's secretRef by hand")
    return text


def sha256_hex(field, value):
    if value is None:
        return None
    text = str(value).strip().lower()
    if text.startswith("sha256:"):
        text = text[len("sha256:"):]
    if not SHA256.match(text):
        raise ParamError(field, "%r is not a SHA-256 digest" % value,
                         "give the 64 hex characters printed by sha256sum for the chart archive")
    return text


def pinned_image(field, value):
    """An image reference pinned by a tag other than ``latest`` or by a digest; returns it stripped."""
    if not isinstance(value, str) or not value.strip():
        raise ParamError(field, "is empty", "give a pinned image such as %s" % EXAMPLE_IMAGE)
    text = value.strip()
    match = IMAGE_REFERENCE.match(text)
    first = text.split("/", 1)[0]
    if match and "/" in text and not ("." in first or ":" in first or first == "localhost") and first != first.lower():
        match = None  # not a registry host, so a path component: lower case only
    if not match:
        raise ParamError(field, "%r is not an image reference" % value,
                         "give registry/path:tag or registry/path@sha256:<digest>, in lower case, such as %s"
                         % EXAMPLE_IMAGE)
    if match.group("digest"):
        return text
    if not match.group("tag"):
        raise ParamError(field, "%r has no tag or digest (it means :latest), so it is not pinned" % value,
                         "pin a fixed tag or a digest, e.g. %s:<version>" % match.group("name"))
    if match.group("tag") == "latest":
        raise ParamError(field, "%r uses the tag latest, which is not pinned" % value,
                         "pin a fixed tag or a digest (@sha256:...)")
    return text


# Label selectors as kubectl -l takes them (node_maintenance's pod_selector, the driver upgrade policy's podSelector).
_SET_TERM = re.compile(r"^(?P<key>[^\s!=(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_OP_TERM = re.compile(r"^(?P<key>[^\s!=(),]+)\s*(?P<op>==|!=|=)\s*(?P<value>[^\s!=(),]*)$")
_EXISTS_TERM = re.compile(r"^(?P<neg>!?)\s*(?P<key>[^\s!=(),]+)$")


def _selector_value(field_name, term, value):
    if len(value) > 63 or not LABEL_VALUE.match(value):
        raise ParamError(field_name, "%r in %r is not a valid label value" % (value, term),
                         "use at most 63 characters: letters, digits, '-', '_' and '.'")
    return value


def parse_selector(field_name, text):
    """A label selector string -> requirements (key, op, value or frozenset); ParamError if bad."""
    if text is None or not str(text).strip():
        return ()
    text = str(text)
    terms, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current.strip())
            current = ""
        else:
            current += char
    terms.append(current.strip())
    requirements = []
    fix = "write it as kubectl -l takes it, e.g. app=trainer,tier!=system or app in (a,b)"
    for term in terms:
        if not term:
            raise ParamError(field_name, "%r has an empty term" % text, fix)
        match = _SET_TERM.match(term)
        if match:
            values = frozenset(v.strip() for v in match.group("values").split(",") if v.strip())
            if not values:
                raise ParamError(field_name, "%r lists no values" % term, fix)
            label_key(field_name, match.group("key"))
            for value in values:
                _selector_value(field_name, term, value)
            requirements.append((match.group("key"), match.group("op"), values))
            continue
        match = _OP_TERM.match(term)
        if match:
            label_key(field_name, match.group("key"))
            operator = "!=" if match.group("op") == "!=" else "="
            requirements.append((match.group("key"), operator,
                                 _selector_value(field_name, term, match.group("value"))))
            continue
        match = _EXISTS_TERM.match(term)
        if not match:
            raise ParamError(field_name, "cannot parse %r in %r" % (term, text), fix)
        label_key(field_name, match.group("key"))
        requirements.append((match.group("key"), "!exists" if match.group("neg") else "exists", None))
    return tuple(requirements)


def selector_matches(requirements, labels):
    """Whether ``labels`` satisfy every requirement (the empty selector matches all)."""
    labels = labels or {}
    for key, operator, value in requirements:
        present, actual = key in labels, labels.get(key)
        ok = {"=": present and actual == value,
              "!=": not present or actual != value,
              "in": present and actual in (value or ()),
              "notin": not present or actual not in (value or ()),
              "exists": present,
              "!exists": not present}[operator]
        if not ok:
            return False
    return True
