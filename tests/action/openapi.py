"""GitHub's OpenAPI description (the trimmed part in data/), as checks on requests and responses.

The fake GitHub API asks `Description.operation` which operation a request names, then
`check_request` whether the request is one GitHub would accept as described: its query
parameters declared and of the declared type, its JSON body valid against the request body
schema (required fields, types, enums, maxItems, maxLength, date-time formats) and with no
field the schema does not name (GitHub ignores those; a typo there is a bug we want to see).
`check_response` holds the fake's own answers to the response schemas.

OpenAPI 3.0 schemas are JSON Schema draft 4 plus `nullable`, which is turned into a "null"
type on loading; `$ref`s are made absolute so that any part of the description can be
checked on its own.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from jsonschema import Draft4Validator, FormatChecker, ValidationError
from referencing import Registry
from referencing.jsonschema import DRAFT4

DESCRIPTION = Path(__file__).parent / "data" / "github-openapi.json"
BASE = "urn:github-openapi"

FORMATS = FormatChecker(formats=())


def _date_time(value: object) -> bool:
    """RFC 3339, as GitHub writes and reads timestamps: 2024-05-01T12:00:00Z."""
    if not isinstance(value, str):
        return True
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)", value):
        raise ValueError(f"{value!r} is not an RFC 3339 date-time")
    datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S")  # a real day and time of day
    return True


def _uri(value: object) -> bool:
    return not isinstance(value, str) or bool(urlsplit(value).scheme and urlsplit(value).netloc)


FORMATS.checks("date-time", raises=ValueError)(_date_time)
FORMATS.checks("uri")(_uri)


@dataclass(frozen=True, slots=True, kw_only=True)
class Operation:
    """One method on one path template of the description."""

    method: str  # upper case, as on the wire
    template: str  # "/repos/{owner}/{repo}/pulls/{pull_number}"
    spec: Mapping[str, Any]

    def __str__(self) -> str:
        return f"{self.method} {self.template}"


class Description:
    """The trimmed description, loaded once, with a validator per schema used."""

    def __init__(self, path: Path = DESCRIPTION) -> None:
        document = _absolute_refs(_nullable(json.loads(path.read_text())))
        self.document: dict[str, Any] = document
        self.version: str = document["x-trimmed-from"]["version"]
        resource = DRAFT4.create_resource(document)
        self._registry: Registry[Any] = Registry().with_resource(BASE, resource)
        self._validators: dict[str, Draft4Validator] = {}
        self._routes: list[tuple[re.Pattern[str], Operation]] = []
        for template, methods in document["paths"].items():
            for method, spec in methods.items():
                operation = Operation(method=method.upper(), template=template, spec=spec)
                self._routes.append((self._route(operation), operation))
        # The most specific template first: /commits/{ref}/check-runs before /commits/{ref},
        # whose `ref` may hold slashes.
        self._routes.sort(key=lambda route: -len(re.sub(r"\{\w+\}", "", route[1].template)))

    @property
    def operations(self) -> list[Operation]:
        return [operation for _, operation in self._routes]

    def operation(self, method: str, path: str) -> tuple[Operation | None, dict[str, str], bool]:
        """The operation a request names, its path parameters, and whether the path is known."""
        known = False
        for pattern, operation in self._routes:
            match = pattern.fullmatch(path)
            if match:
                known = True
                if operation.method == method:
                    params = {name: unquote(value) for name, value in match.groupdict().items()}
                    return operation, params, True
        return None, {}, known

    def check_request(
        self,
        operation: Operation,
        *,
        path_params: Mapping[str, str],
        query: Mapping[str, list[str]],
        body: Any,
    ) -> list[str]:
        """What in a request breaks the description (empty: nothing); body None: none sent."""
        return self.check_parameters(operation, path_params=path_params, query=query) + (
            self.check_body(operation, body)
        )

    def check_parameters(
        self,
        operation: Operation,
        *,
        path_params: Mapping[str, str],
        query: Mapping[str, list[str]],
    ) -> list[str]:
        """What in the path and query parameters breaks the description."""
        problems: list[str] = []
        declared = {(p["in"], p["name"]): p for p in self._parameters(operation)}
        for name, value in path_params.items():
            problems += self._parameter(declared.get(("path", name)), "path", name, [value])
        for name, values in query.items():
            problems += self._parameter(declared.get(("query", name)), "query", name, values)
        for (where, name), parameter in declared.items():
            if parameter.get("required") and where == "query" and name not in query:
                problems.append(f"query parameter `{name}` is required")
        return problems

    def check_body(self, operation: Operation, body: Any) -> list[str]:
        """What in a JSON body (None: none sent) breaks the request body schema."""
        request_body = operation.spec.get("requestBody")
        if request_body is None:
            return [] if body is None else ["a body is sent; none is declared"]
        if body is None:
            return ["the body is missing"] if request_body.get("required") else []
        schema = _strict(request_body["content"]["application/json"]["schema"])
        return self._errors(schema, body, "body")

    def check_response(self, operation: Operation, status: int, body: Any) -> list[str]:
        """What in a response breaks the description (empty: nothing)."""
        responses = operation.spec["responses"]
        response = responses.get(str(status)) or responses.get("default")
        if response is None:
            return [f"response status {status} is not declared"]
        if "$ref" in response:
            response = self._registry.resolver(BASE).lookup(response["$ref"]).contents
        media = response.get("content", {}).get("application/json")
        if media is None:
            return [] if body is None else [f"response {status} has a body; none is declared"]
        return self._errors(media["schema"], body, f"response {status} body")

    def _route(self, operation: Operation) -> re.Pattern[str]:
        """The path template as a pattern; an `x-multi-segment` parameter (a ref) may hold '/'."""
        multi = {p["name"] for p in self._parameters(operation) if p.get("x-multi-segment")}
        parts = re.split(r"\{(\w+)\}", operation.template)
        pattern = ""
        for index, part in enumerate(parts):
            if index % 2 == 0:
                pattern += re.escape(part)
            else:
                pattern += f"(?P<{part}>{'.+' if part in multi else '[^/]+'})"
        return re.compile(pattern)

    def _parameters(self, operation: Operation) -> Iterable[Mapping[str, Any]]:
        resolver = self._registry.resolver(BASE)
        for parameter in operation.spec.get("parameters", []):
            if "$ref" in parameter:
                yield resolver.lookup(parameter["$ref"]).contents
            else:
                yield parameter

    def _parameter(
        self, parameter: Mapping[str, Any] | None, where: str, name: str, values: list[str]
    ) -> list[str]:
        if parameter is None:
            return [f"{where} parameter `{name}` is not declared"]
        schema = parameter.get("schema", {})
        if len(values) > 1 and schema.get("type") != "array":
            return [f"{where} parameter `{name}` is given {len(values)} times"]
        try:
            value = _typed(values[0], schema.get("type"))
        except ValueError:
            return [f"{where} parameter `{name}`: {values[0]!r} is not of type {schema['type']}"]
        return self._errors(schema, value, f"{where} parameter `{name}`")

    def _errors(self, schema: Mapping[str, Any], value: Any, what: str) -> list[str]:
        key = json.dumps(schema, sort_keys=True)
        validator = self._validators.get(key)
        if validator is None:
            validator = Draft4Validator(schema, registry=self._registry, format_checker=FORMATS)
            self._validators[key] = validator
        return [
            f"{what}{_where(error.absolute_path)}: {_message(error)}"
            for error in sorted(validator.iter_errors(value), key=lambda e: list(e.path))
        ]


def _message(error: ValidationError) -> str:
    """The error in one short line: sizes rather than a 70,000-character value."""
    if error.validator in ("maxLength", "maxItems"):
        unit = "characters" if error.validator == "maxLength" else "items"
        return f"{len(error.instance)} {unit}, more than {error.validator_value}"
    message = str(error.message).replace("\n", " ")
    return message if len(message) <= 200 else message[:199] + "…"


def _where(path: Iterable[object]) -> str:
    return "".join(f"[{part!r}]" if isinstance(part, str) else f"[{part}]" for part in path)


def _typed(value: str, kind: str | None) -> Any:
    """A query or path value as the type its schema declares (all values arrive as text)."""
    if kind == "integer":
        if not re.fullmatch(r"-?\d+", value):
            raise ValueError(value)
        return int(value)
    if kind == "boolean":
        if value not in ("true", "false"):
            raise ValueError(value)
        return value == "true"
    return value


def _nullable(node: Any) -> Any:
    """OpenAPI's `nullable: true` as JSON Schema: "null" among the types (and the enum)."""
    if isinstance(node, list):
        return [_nullable(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _nullable(value) for key, value in node.items()}
    if node.pop("nullable", False) is not True:
        return node
    if isinstance(node.get("type"), str):
        node["type"] = [node["type"], "null"]
        if "enum" in node:
            node["enum"] = [*node["enum"], None]
        return node
    return {"anyOf": [{"type": "null"}, node]}


def _absolute_refs(node: Any) -> Any:
    if isinstance(node, list):
        return [_absolute_refs(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {
        key: BASE + value if key == "$ref" and value.startswith("#") else _absolute_refs(value)
        for key, value in node.items()
    }


def _strict(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A request body schema where an object takes no field it does not name.

    Only the inline schema is made strict (request bodies here are inline); an object that
    says `additionalProperties` keeps what it says.
    """
    strict = copy.deepcopy(dict(schema))
    stack: list[Any] = [strict]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return strict
