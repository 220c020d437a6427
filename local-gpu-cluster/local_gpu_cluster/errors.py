"""API errors of the fake server, rendered as Kubernetes ``Status`` objects."""


class ApiError(Exception):
    """An error the API answers with a ``Status`` (status Failure)."""

    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self):
        body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            body["details"] = self.details
        return body


def _details(rtype, name):
    details = {"name": name, "kind": rtype.plural}
    if rtype.group:
        details["group"] = rtype.group
    return details


def not_found(rtype, name):
    return ApiError(404, "NotFound", f'{rtype.group_resource} "{name}" not found',
                    _details(rtype, name))


def already_exists(rtype, name):
    return ApiError(409, "AlreadyExists", f'{rtype.group_resource} "{name}" already exists',
                    _details(rtype, name))


def conflict(rtype, name):
    return ApiError(
        409, "Conflict",
        f'Operation cannot be fulfilled on {rtype.group_resource} "{name}": the object has '
        "been modified; please apply your changes to the latest version and try again",
        _details(rtype, name))


def invalid(rtype, name, causes):
    """422 Invalid; ``causes`` is a list of (field, message)."""
    text = "; ".join(f"{field}: {message}" for field, message in causes)
    details = _details(rtype, name)
    details["kind"] = rtype.kind
    details["causes"] = [{"reason": "FieldValueInvalid", "message": message, "field": field}
                         for field, message in causes]
    return ApiError(422, "Invalid", f'{rtype.kind} "{name}" is invalid: {text}', details)


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def route_not_found():
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def method_not_allowed(method):
    return ApiError(405, "MethodNotAllowed", f"the server does not allow this method ({method}) "
                    "on the requested resource")


def unsupported_media_type(content_type):
    return ApiError(415, "UnsupportedMediaType",
                    f'the body of the request was in an unknown format ("{content_type}")')


def gone(message):
    return ApiError(410, "Expired", message)
