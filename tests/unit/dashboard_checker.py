"""A small PromQL checker (structure only) and accessors of the monitoring layer's Grafana dashboard, shared by
the dashboard tests."""
import re

from ansible_collections.gpu_platform.cluster.plugins.module_utils.domain.monitoring import (
    objects as monitoring, metrics as monitoring_metrics, panels as monitoring_panels)

NS = "gpu-operator"
CUSTOM = {"temperature_celsius": 80.5, "memory_ratio": 0.9, "for_minutes": 3, "xid_window_minutes": 15}


# -- a small PromQL checker (structure only; promtool below parses for real when installed) -----

# PromQL functions and aggregation operators the dashboard may call (Prometheus 2.x/3.x names).
FUNCTIONS = {"abs", "avg", "avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "count",
             "count_over_time", "delta", "deriv", "floor", "histogram_quantile", "idelta", "increase", "irate",
             "label_replace", "last_over_time", "max", "max_over_time", "min", "min_over_time", "quantile",
             "rate", "resets", "round", "scalar", "sort", "sort_desc", "stddev", "sum", "sum_over_time", "topk",
             "bottomk", "vector", "group", "absent"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset"}
PAIRS = {")": "(", "]": "[", "}": "{"}
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)")
MATCHERS = re.compile(r"\{([^}]*)\}")
MATCHER = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*\"\"\s*$")
RANGE = re.compile(r"\[[^\]]*\]")
WORD = re.compile(r"(?<![A-Za-z0-9_:.])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?")
LEGEND_LABEL = re.compile(r"\{\{\s*([^}\s]+)\s*\}\}")
LABEL_VALUES = re.compile(r"^label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\)$")


def allowed_labels():
    """The exporter's labels and the ones the ServiceMonitor's relabelings add (node)."""
    relabeled = {r["targetLabel"] for r in monitoring.service_monitor(NS)["spec"]["endpoints"][0]["relabelings"]}
    return set(monitoring_metrics.DCGM_LABELS) | relabeled


def brackets_error(expr):
    stack, quote = [], None
    for char in expr:
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'`":
            quote = char
        elif char in "([{":
            stack.append(char)
        elif char in PAIRS:
            if not stack or stack.pop() != PAIRS[char]:
                return "unbalanced %r" % char
    if quote or stack:
        return "unclosed %r" % (quote or stack[-1])
    return None


def expr_problems(expr):
    """What is wrong with a PromQL expression: brackets, unknown metrics, functions or labels."""
    problem = brackets_error(expr)
    if problem:
        return [problem]
    errors, labels = [], allowed_labels()
    text = STRING.sub('""', expr)
    for match in GROUPING.finditer(text):
        for label in filter(None, (part.strip() for part in match.group(2).split(","))):
            if label not in labels:
                errors.append("label %r in %s() is not one the exporter or the ServiceMonitor sets" % (label, match.group(1)))
    text = GROUPING.sub(" ", text)  # "sum by (node) (x)" -> "sum  (x)": sum stays a call
    for match in MATCHERS.finditer(text):
        for part in filter(str.strip, match.group(1).split(",")):
            found = MATCHER.match(part)
            if not found:
                errors.append("matcher %r does not parse" % part)
            elif found.group(1) not in labels:
                errors.append("label %r in a matcher is not one the exporter or the ServiceMonitor sets" % found.group(1))
    text = RANGE.sub(" ", MATCHERS.sub(" ", text))
    for match in WORD.finditer(text):
        name, call = match.group(1), match.group(2)
        if name in KEYWORDS:
            continue
        if call:
            if name not in FUNCTIONS:
                errors.append("%r is not a PromQL function" % name)
        elif name not in monitoring_metrics.DCGM_METRICS:
            errors.append("metric %r is not one dcgm-exporter %s exports" % (name, monitoring_metrics.DCGM_EXPORTER_VERSION))
    # the domain's extractor must agree: every DCGM_FI_* identifier is a known metric
    errors += ["metric %r is unknown (metric_names)" % name
               for name in sorted(monitoring_metrics.metric_names(expr) - set(monitoring_metrics.DCGM_METRICS))]
    return errors


def variable_exprs(dashboard):
    """The series selectors inside the query variables' label_values(<selector>, <label>)."""
    out = []
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            found = LABEL_VALUES.match(var["query"])
            assert found, var["query"]
            out.append((found.group(1), found.group(2)))
    return out


def dashboard_problems(dashboard):
    errors = []
    for expr in monitoring_panels.dashboard_exprs(dashboard):
        errors += ["%s: %s" % (expr, e) for e in expr_problems(expr)]
    for selector, label in variable_exprs(dashboard):
        errors += ["%s: %s" % (selector, e) for e in expr_problems(selector)]
        if label not in allowed_labels():
            errors.append("label_values over unknown label %r" % label)
    for panel in graph_panels(dashboard):
        for target in panel["targets"]:
            errors += ["legend %r: unknown label %r" % (target["legendFormat"], label)
                       for label in LEGEND_LABEL.findall(target.get("legendFormat", "")) if label not in allowed_labels()]
    return errors


def graph_panels(dashboard):
    return [p for p in dashboard["panels"] if p["type"] != "row"]


def panel(dashboard, title):
    found = [p for p in dashboard["panels"] if p["title"] == title]
    assert len(found) == 1, title
    return found[0]
