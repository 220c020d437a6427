"""Label and field selectors with the Kubernetes string syntax.

Label selectors: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``
(exists), ``!k`` (does not exist), ``k>n`` / ``k<n`` (numeric), joined by commas (AND).
``LabelSelector.from_spec`` builds one from an object's ``matchLabels``/``matchExpressions``.

Field selectors: ``path=v``, ``path==v``, ``path!=v`` joined by commas, where ``path`` is
any dotted path into the object (``metadata.name``, ``spec.nodeName``, ``status.phase``,
``type``...); a missing field compares as the empty string.
"""

import re

from .errors import bad_request

_SET_RE = re.compile(r"^\s*(!?)\s*([^\s!=<>()]+)\s*(?:(notin|in)\s*\((.*)\)\s*)?$")
_OP_RE = re.compile(r"^\s*([^\s!=<>()]+)\s*(==|!=|=|<|>)\s*([^\s,()]*)\s*$")


def _split_terms(text):
    """Split on commas that are not inside parentheses."""
    terms, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [term for term in terms if term.strip()]


def _parse_requirement(term):
    match = _OP_RE.match(term)
    if match:
        key, operator, value = match.groups()
        operator = "=" if operator == "==" else operator
        if operator in "<>" and not re.fullmatch(r"-?\d+", value):
            raise bad_request(f"unable to parse requirement: {term!r}: value must be an integer")
        return (key, operator, value)
    match = _SET_RE.match(term)
    if not match:
        raise bad_request(f"unable to parse requirement: {term!r}")
    negate, key, set_op, values = match.groups()
    if set_op:
        if negate:
            raise bad_request(f"unable to parse requirement: {term!r}")
        return (key, set_op, frozenset(v.strip() for v in values.split(",") if v.strip()))
    return (key, "!exists" if negate else "exists", None)


def _requirement_matches(requirement, labels):
    key, operator, value = requirement
    present = key in labels
    actual = labels.get(key)
    if operator == "=":
        return present and actual == value
    if operator == "!=":
        return not present or actual != value
    if operator == "in":
        return present and actual in value
    if operator == "notin":
        return not present or actual not in value
    if operator == "exists":
        return present
    if operator == "!exists":
        return not present
    if not present or not re.fullmatch(r"-?\d+", actual):
        return False
    return int(actual) > int(value) if operator == ">" else int(actual) < int(value)


class LabelSelector:
    """A parsed label selector (an AND of requirements); the empty selector matches all."""

    def __init__(self, requirements=()):
        self.requirements = tuple(requirements)

    @classmethod
    def parse(cls, text):
        return cls(_parse_requirement(term) for term in _split_terms(text or ""))

    @classmethod
    def from_spec(cls, spec):
        """From a LabelSelector object (``matchLabels`` / ``matchExpressions``)."""
        spec = spec or {}
        requirements = [(k, "=", v) for k, v in (spec.get("matchLabels") or {}).items()]
        operators = {"In": "in", "NotIn": "notin", "Exists": "exists",
                     "DoesNotExist": "!exists"}
        for expr in spec.get("matchExpressions") or []:
            values = frozenset(expr.get("values") or ())
            requirements.append((expr["key"], operators[expr["operator"]], values))
        return cls(requirements)

    def matches(self, labels):
        labels = labels or {}
        return all(_requirement_matches(req, labels) for req in self.requirements)


def field_value(obj, path):
    """The value at a dotted path as a string ("" when missing; booleans lower-case)."""
    value = obj
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return ""
        value = value[part]
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


class FieldSelector:
    """A parsed field selector: an AND of (path, "=" or "!=", value)."""

    def __init__(self, requirements=()):
        self.requirements = tuple(requirements)

    @classmethod
    def parse(cls, text):
        requirements = []
        for term in _split_terms(text or ""):
            match = re.fullmatch(r"\s*([\w.\-/]+)\s*(==|!=|=)\s*(.*?)\s*", term)
            if not match:
                raise bad_request(f"invalid field selector: {term!r}")
            path, operator, value = match.groups()
            requirements.append((path, "!=" if operator == "!=" else "=", value))
        return cls(requirements)

    def matches(self, obj):
        for path, operator, value in self.requirements:
            if (field_value(obj, path) == value) != (operator == "="):
                return False
        return True


class ObjectFilter:
    """Namespace + label selector + field selector, as used by list and watch."""

    def __init__(self, namespace=None, label_selector="", field_selector=""):
        self.namespace = namespace
        self.labels = (label_selector if isinstance(label_selector, LabelSelector)
                       else LabelSelector.parse(label_selector))
        self.fields = (field_selector if isinstance(field_selector, FieldSelector)
                       else FieldSelector.parse(field_selector))

    def matches(self, obj):
        meta = obj.get("metadata") or {}
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        return self.labels.matches(meta.get("labels")) and self.fields.matches(obj)
