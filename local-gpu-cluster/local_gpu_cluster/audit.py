"""The local API server's audit log, read back: the judge of "nothing written" and of check mode.

A snapshot of chosen objects before and after a run only sees the kinds and namespaces it looks at: a label patched
on a node, a team's namespace or any cluster-scoped object goes unseen. The API server itself records every request
(``components.audit_flags``: every request at ``Metadata`` level, the ``RequestReceived`` stage omitted, JSON lines,
blocking mode, so a request's line is written in the request's own goroutine before its response ends), so the
question "did this client write anything between two moments" is answered from what the server received.

``AuditLog(path)``: ``mark()`` before the run, ``writes(mark, user=...)`` after it. Standard library only: the
tests, the command line and a user with a kubeconfig can all read it, and nothing of the collection is needed.

Choices:

* A write is a request whose verb is ``create``, ``update``, ``patch``, ``delete`` or ``deletecollection``, on any
  resource or subresource (``nodes/status``, ``pods/eviction``, ``pods/exec`` included), but the reviews
  (``REVIEWS``: access, subject and token reviews are created to ask a question and are never stored).
* A server-side dry-run (``dryRun=All`` in the request URI) writes nothing: check mode sends those, so they are left
  out unless asked for (``dry_run=True`` gives them alone).
* A write the server refused (its response code 400 or more: a webhook's or admission's refusal, a conflict, a
  missing object) is still reported by default: the client attempted it, and "nothing written" means the client
  did not try. ``failed=False`` leaves those out, for a caller that judges only what changed.
* The window is by the time the server received the request (``requestReceivedTimestamp``), on this machine's clock,
  which the loopback server shares.
* Rotated files (``audit-<UTC time>.log``, gzip-compressed ones too) are read as well as the current one; files last
  written before the mark are not opened, and in the file that was current at the mark reading starts where it
  ended then.
"""

import fnmatch
import gzip
import json
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

LOG_NAME = "audit.log"
POLICY_NAME = "audit-policy.yaml"
WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")
# Creates that store nothing: the questions "who am I" and "may I" (kubectl auth whoami and can-i, a module checking
# its RBAC first) and a token's review. (A TokenRequest, serviceaccounts/token, is reported: it mints a credential.)
REVIEWS = ("selfsubjectreviews", "tokenreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews",
           "subjectaccessreviews", "localsubjectaccessreviews")
# The policy the API server runs with: every request at Metadata level (who, what, on which object, the answer's
# code; no bodies, so no secret reaches the log), once it has an answer (RequestReceived omitted: half the lines).
POLICY = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
          "rules": [{"level": "Metadata"}]}


def write_policy(directory):
    """Write the audit policy into ``directory`` (JSON is YAML); its path."""
    path = Path(directory) / POLICY_NAME
    path.write_text(json.dumps(POLICY, indent=1) + "\n")
    return path


@dataclass(frozen=True)
class Mark:
    """A moment in the log: the time (UTC) and where the file current then ended (its inode and size)."""
    time: datetime
    inode: int = 0
    offset: int = 0


@dataclass(frozen=True)
class Request:
    """One request as the audit log recorded it (its last stage)."""
    verb: str
    resource: str  # plural, with its subresource after a slash: "nodes/status"
    api_group: str
    namespace: str
    name: str
    user: str
    user_agent: str
    request_uri: str
    code: int
    received: datetime

    @property
    def is_write(self):
        return self.verb in WRITE_VERBS and self.resource not in REVIEWS

    @property
    def dry_run(self):
        return "All" in parse_qs(urlsplit(self.request_uri).query).get("dryRun", [])

    def __str__(self):
        where = "%s/%s" % (self.namespace, self.name) if self.namespace else self.name or "(collection)"
        target = "%s %s " % (self.resource, where) if self.resource else ""  # none for /version, /apis
        return "%s %sby %s (%s): %d %s" % (self.verb, target, self.user, self.user_agent, self.code,
                                           self.request_uri)


def _time(text):
    """An audit timestamp ("2026-11-28T12:00:06.123456Z") as an aware datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _as_time(moment):
    if moment is None or isinstance(moment, datetime):
        return moment
    return moment.time


def _request(event):
    ref = event.get("objectRef") or {}
    resource = ref.get("resource", "")
    namespace = ref.get("namespace", "")
    if resource == "namespaces":  # the server gives a namespace's own name as its namespace: it is cluster-scoped
        namespace = ""
    if ref.get("subresource"):
        resource += "/" + ref["subresource"]
    user = event.get("user") or {}
    return Request(verb=event.get("verb", ""), resource=resource, api_group=ref.get("apiGroup", ""),
                   namespace=namespace, name=ref.get("name", ""), user=user.get("username", ""),
                   user_agent=event.get("userAgent", ""), request_uri=event.get("requestURI", ""),
                   code=int((event.get("responseStatus") or {}).get("code") or 0),
                   received=_time(event["requestReceivedTimestamp"]))


def _rule(rule):
    """A predicate from an ``allow`` entry: a callable as it is, or ``(resource, namespace pattern)``: the resource
    (its subresources too) in a namespace matching the pattern (fnmatch); for ``namespaces``, the namespace's own
    name is matched."""
    if callable(rule):
        return rule
    resource, pattern = rule

    def allowed(request):
        if request.resource.split("/")[0] != resource:
            return False
        namespace = request.name if resource == "namespaces" else request.namespace
        return fnmatch.fnmatchcase(namespace, pattern)
    return allowed


class AuditLog:
    """The audit log at ``path`` and its rotated files beside it."""

    def __init__(self, path):
        self.path = Path(path)

    def mark(self):
        """Now, as a ``Mark``: the current file's size is read before the clock, so every line before that offset
        is of a request received before the mark."""
        try:
            stat = self.path.stat()
            inode, offset = stat.st_ino, stat.st_size
        except FileNotFoundError:
            inode, offset = 0, 0
        return Mark(datetime.now(timezone.utc), inode, offset)

    def files(self):
        """The rotated files, oldest first, then the current one (lumberjack's names: ``audit-<time>.log[.gz]``)."""
        stem, suffix = os.path.splitext(self.path.name)
        rotated = sorted(p for p in self.path.parent.glob("%s-*%s*" % (stem, suffix))
                         if p.name.endswith((suffix, suffix + ".gz")))
        return rotated + ([self.path] if self.path.exists() else [])

    def _lines(self, since):
        """(file, where in it, text) of every whole line that may hold a request received at ``since`` or later."""
        for path in self.files():
            try:
                stat = path.stat()
            except FileNotFoundError:  # rotated away or removed while listing
                continue
            if since is not None and stat.st_mtime_ns < since.time.timestamp() * 1e9:
                continue  # last written before the mark
            start = since.offset if since is not None and stat.st_ino == since.inode else 0
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rb") as handle:
                if start and not path.suffix == ".gz":
                    handle.seek(start)
                number = 0
                for raw in handle:
                    number += 1
                    if not raw.endswith(b"\n"):
                        break  # the line being written now: its request is not over yet
                    yield path, "line %d" % number + (" after byte %d" % start if start else ""), raw

    def requests(self, since=None, until=None, user=None, user_agent=None):
        """Every request received from ``since`` (a Mark or an aware datetime) until ``until`` (excluded), by
        ``user`` (its user name, exactly) and ``user_agent`` (a prefix: "kubectl/", "Helm/"), one per request (a
        watch's ResponseStarted and ResponseComplete lines count once), in the order received."""
        if not self.path.exists():  # an empty answer would pass for "nothing written"
            raise FileNotFoundError("no audit log at %s: the API server writes it from the start (a cluster started "
                                    "before it did: cluster-down, then cluster-up)" % self.path)
        mark = since if isinstance(since, Mark) or since is None else Mark(since)
        start, end = _as_time(since), _as_time(until)
        found = {}
        for path, where, raw in self._lines(mark):
            try:
                event = json.loads(raw)
                request = _request(event)
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError("%s, %s, is not an audit event: %s" % (path, where, exc)) from None
            if start is not None and request.received < start or end is not None and request.received >= end:
                continue
            if user is not None and request.user != user:
                continue
            if user_agent is not None and not request.user_agent.startswith(user_agent):
                continue
            found[event.get("auditID") or (str(path), where)] = request
        return sorted(found.values(), key=lambda r: r.received)

    def writes(self, since, until=None, user=None, user_agent=None, allow=(), failed=True, dry_run=False):
        """The write requests of the window by the client (``requests``' filters), but those ``allow`` lets through
        (callables taking a Request, or ``(resource, namespace pattern)`` rules). Server-side dry-runs are left out
        (``dry_run=True``: those alone); refused writes are kept unless ``failed`` is False."""
        rules = [_rule(rule) for rule in allow]
        return [r for r in self.requests(since, until, user, user_agent)
                if r.is_write and r.dry_run == dry_run and (failed or r.code < 400)
                and not any(rule(r) for rule in rules)]


def describe(requests):
    """One line per request, for an assertion's message."""
    return "\n".join(str(r) for r in requests) or "(none)"
