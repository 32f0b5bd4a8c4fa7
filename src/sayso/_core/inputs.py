"""What a workflow node asks a person for (`RequestInput`), and how the answer is checked.

Pure: no I/O. A response schema may be a Python type (`str`, `int`, `list[str]`), a pydantic
model, a JSON Schema dict, or `None` (any JSON value). [`input_schema`][] turns any of them
into an [`InputSchema`][]: the JSON Schema every interface shows (and builds its form from)
plus a validator that reports *every* problem, each naming the field and why
(`city: field required`).

Two checks with one meaning, on purpose:

- when a decision arrives, it is checked against the request's JSON Schema
  ([`input_problems`][]); that needs nothing but the stored request, so any process can refuse
  a wrong answer and leave the pause open;
- when the node gets the answer back, it is validated against the Python type the node gave,
  so the node receives a model instance where a model was given.

The first check must refuse what the second would, or an answer is taken and then thrown away:
string formats (`date-time`, `date`, `uri`...) are checked as pydantic reads the type it writes
each one for ([`input_formats`][]), in both checks of a JSON Schema.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from datetime import date, datetime, time, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import AnyUrl, EmailStr, PydanticUserError, TypeAdapter, ValidationError
from pydantic.errors import PydanticSchemaGenerationError
from pydantic.json_schema import JsonSchemaValue

from ..exceptions import ConfigError, SchemaMismatch

if TYPE_CHECKING:
    import jsonschema

ANY_JSON_SCHEMA: JsonSchemaValue = {}
"""The schema of an input that takes any JSON value (a `RequestInput` without `response_schema`)."""


@dataclass(frozen=True)
class RequestInput:
    """Yielded by a workflow node to stop and ask a person for input.

    ```python
    async def ask_city(node_input: str):
        answer = yield RequestInput("Which city?", response_schema=Trip)
        return answer.city  # a `Trip`: the answer was validated against it
    ```

    The answer is validated fully against `response_schema`; a wrong one is refused with a
    message naming the field, and the question stays open.
    """

    message: str
    """What the person reads: why the input is needed and what to give."""
    _: KW_ONLY
    payload: Any = None
    """Data shown with the message (an itinerary to review, say); must be JSON-serialisable
    (pydantic models and dataclasses are turned into JSON)."""
    response_schema: object = None
    """What the answer must be: a Python type, a pydantic model, a JSON Schema dict, or `None`
    for any JSON value."""


@dataclass(frozen=True, kw_only=True)
class InputSchema:
    """A response schema made usable: the JSON Schema to show, and the validator of the answer."""

    json_schema: JsonSchemaValue
    """The JSON Schema interfaces show and decisions are checked against."""
    _adapter: TypeAdapter[Any] | None = None
    _validator: jsonschema.protocols.Validator | None = None

    def validate(self, value: Any) -> Any:
        """The validated answer (a model instance where a model was given).

        Raises:
            SchemaMismatch: the value breaks the schema; `problems` holds every field and why.
        """
        if self._adapter is not None:
            try:
                return self._adapter.validate_python(value)
            except ValidationError as exc:
                raise SchemaMismatch(_pydantic_problems(exc)) from None
        if self._validator is not None:
            problems = _validator_problems(self._validator, value)
            if problems:
                raise SchemaMismatch(problems)
            return as_schema_gives(self.json_schema, value)
        return value

    def field_problems(self, value: Any) -> dict[str, str]:
        """How `value` breaks the schema, by field path (`""`: the answer as a whole); empty when it fits.

        Where a type was given this is the type's own verdict (its validators included), which the
        JSON Schema it shows may not carry; several problems of one field are joined with `; `.
        """
        if self._adapter is None:
            return input_field_problems(self.json_schema, value)
        try:
            self._adapter.validate_python(value)
        except ValidationError as exc:
            found: dict[str, list[str]] = {}
            for error in exc.errors(include_url=False):
                found.setdefault(_where(error["loc"]), []).append(_lower(error["msg"]))
            return {where: "; ".join(dict.fromkeys(whys)) for where, whys in found.items()}
        return {}

    def dump(self, value: Any) -> Any:
        """`value` (already validated) as plain JSON, the form that is stored and sent."""
        if self._adapter is not None:
            return self._adapter.dump_python(value, mode="json")
        return value


def as_schema_gives(schema: JsonSchemaValue, value: Any, root: JsonSchemaValue | None = None) -> Any:
    """`value` (which fits `schema`) as the schema promises it: whole numbers as ints, left-out fields' defaults.

    JSON Schema counts 3.0 as an integer and clients that serialise floats send it so; and an answer
    over REST or A2A may leave out a field the schema gives a `default`, which a form would have filled
    in. The code the answer is for was promised an integer and the field (as a pydantic type gives
    them), not a float `range` fails on or a missing key. Followed through `properties`,
    `additionalProperties`, `items`, `prefixItems` and local `$ref`s.
    """
    root = schema if root is None else root
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for step in ref[2:].split("/"):
            target = target.get(step.replace("~1", "/").replace("~0", "~")) if isinstance(target, dict) else None
        if isinstance(target, dict):
            value = as_schema_gives(target, value, root)
    kind = schema.get("type")
    if isinstance(value, float) and value.is_integer() and (kind == "integer" or _only_integer(kind)):
        return int(value)
    if isinstance(value, dict):
        props, extra = schema.get("properties"), schema.get("additionalProperties")
        given = {
            k: as_schema_gives(sub, v, root) if isinstance(sub := (props or {}).get(k, extra), dict) else v
            for k, v in value.items()
        }
        for name, sub in (props or {}).items():
            if name not in given and isinstance(sub, dict) and "default" in sub:
                given[name] = copy.deepcopy(sub["default"])
        return given
    if isinstance(value, list):
        items, prefix = schema.get("items"), schema.get("prefixItems") or []
        return [
            as_schema_gives(sub, v, root) if isinstance(sub := (prefix[i] if i < len(prefix) else items), dict) else v
            for i, v in enumerate(value)
        ]
    return value


def _only_integer(kind: object) -> bool:
    """A `type` list that admits integers and no other numbers (`["integer", "null"]`)."""
    return isinstance(kind, list) and "integer" in kind and "number" not in kind


def input_schema(spec: object) -> InputSchema:
    """Normalise a response schema: a Python type, a pydantic model, a JSON Schema dict, or `None`.

    Raises:
        ConfigError: the spec is none of those, or is a dict that is not a valid JSON Schema.
    """
    if spec is None:
        return InputSchema(json_schema=ANY_JSON_SCHEMA)
    if isinstance(spec, dict):
        return _dict_schema(spec)
    try:
        return _type_schema(spec)
    except TypeError:
        # Unhashable (an instance, say): not cacheable, and not a type either.
        return _build_type_schema(spec)


def validate_input(schema: object, value: Any) -> Any:
    """Validate `value` against a response schema in any of the forms `input_schema` takes.

    Returns:
        The validated value; a model instance where a pydantic model was given.

    Raises:
        SchemaMismatch: every problem, each as `field.path: why` (`city: field required`).
        ConfigError: the schema itself is unusable.
    """
    normalised = schema if isinstance(schema, InputSchema) else input_schema(schema)
    return normalised.validate(value)


def input_problems(json_schema: JsonSchemaValue, value: Any) -> tuple[str, ...]:
    """Every way `value` breaks `json_schema`, as `field.path: why`; empty when it fits."""
    return _validator_problems(_compiled(json_schema), value)


def input_field_problems(json_schema: JsonSchemaValue, value: Any) -> dict[str, str]:
    """How `value` breaks `json_schema`, by field path (`address.zip`; `""` for the answer as a whole).

    What a form shows next to each field; several problems of one field are joined with `; `.
    """
    found: dict[str, list[str]] = {}
    for where, why in _validator_pairs(_compiled(json_schema), value):
        found.setdefault(where, []).append(why)
    return {where: "; ".join(dict.fromkeys(whys)) for where, whys in found.items()}


def _compiled(json_schema: JsonSchemaValue) -> jsonschema.protocols.Validator:
    """A validator of `json_schema`, built once per schema.

    Each answer is checked twice (when decided, and when the node gets it) and a loop asks the
    same question again, while building a validator costs more than a check.
    """
    return _compiled_text(json.dumps(json_schema, sort_keys=True, separators=(",", ":")))


@lru_cache(maxsize=256)
def _compiled_text(text: str) -> jsonschema.protocols.Validator:
    schema = json.loads(text)
    return _validator_class(schema)(schema, format_checker=input_formats())


def _dict_schema(spec: JsonSchemaValue) -> InputSchema:
    problem = schema_problem(spec)
    if problem is not None:
        raise ConfigError(f"response_schema is not a valid JSON Schema: {problem}")
    return InputSchema(json_schema=spec, _validator=_validator_class(spec)(spec, format_checker=input_formats()))


def schema_problem(spec: JsonSchemaValue) -> str | None:
    """Why `spec` is not a valid JSON Schema, by the draft its `$schema` names (2020-12 by default); `None` if it is.

    The one check of a schema someone gave (a node's response schema, a client tool's parameters), so a
    schema no validator could use is refused where it is given, never when an answer is checked against it.
    """
    import jsonschema

    if not isinstance(spec.get("$schema", ""), str):
        return "$schema: must be the URI of a JSON Schema draft"
    try:
        _validator_class(spec).check_schema(spec)
    except jsonschema.SchemaError as exc:
        return _say(_where(exc.absolute_path), exc.message)
    except RecursionError:
        return "it nests too deeply"
    return None


@lru_cache(maxsize=512)
def _type_schema(spec: object) -> InputSchema:
    # A node that loops asks again with the same type; building a TypeAdapter costs far more than a check.
    return _build_type_schema(spec)


def _build_type_schema(spec: Any) -> InputSchema:
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(spec)
        json_schema = adapter.json_schema()
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
        why = str(exc).splitlines()[0]
        raise ConfigError(
            f"response_schema {spec!r} is not a type, a pydantic model or a JSON Schema dict: {why}"
        ) from None
    return InputSchema(json_schema=json_schema, _adapter=adapter)


_RFC3339_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")


@lru_cache(maxsize=1)
def form_formats() -> jsonschema.FormatChecker:
    """The checker of every string format an MCP form may ask for: `email`, `uri`, `date` and `date-time`.

    jsonschema checks `date-time` and `uri` only with optional packages installed, and passes
    anything without them; the server that asked checks them when it reads the answer, and
    refuses the whole call, so an answer is checked here first and a wrong one keeps the form open.
    """
    import jsonschema

    checker = jsonschema.FormatChecker()

    @checker.checks("date-time", raises=ValueError)
    def date_time(value: object) -> bool:
        if not isinstance(value, str):
            return True
        if not _RFC3339_DATE_TIME.fullmatch(value):
            return False
        datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
        return True

    @checker.checks("uri")
    def uri(value: object) -> bool:
        return not isinstance(value, str) or _URI_SCHEME.fullmatch(value) is not None

    return checker


_PYDANTIC_FORMATS: tuple[tuple[str, Any], ...] = (
    ("date-time", datetime),
    ("date", date),
    ("time", time),
    ("duration", timedelta),
    ("uuid", UUID),
    ("uri", AnyUrl),
    ("email", EmailStr),
)
"""Each string format pydantic writes into a JSON Schema, and the type it writes it for."""


@lru_cache(maxsize=1)
def input_formats() -> jsonschema.FormatChecker:
    """The checker of the string formats of a response schema: each as pydantic reads its type.

    A node given a pydantic type has its answer validated by pydantic, after the answer was checked
    against the type's JSON Schema and recorded; so `format: date-time` means here what a `datetime`
    field takes, `2024-05-01T10:00` (no zone) included, which RFC 3339 and so [`form_formats`][]
    refuse. Formats pydantic never writes are checked as [`form_formats`][] checks them.
    """
    import jsonschema

    checker = jsonschema.FormatChecker(formats=())
    checker.checkers.update(form_formats().checkers)
    for name, kind in _PYDANTIC_FORMATS:
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(kind)
        except ImportError:  # `EmailStr` without the email-validator package: no pydantic type can use it either
            continue
        checker.checks(name, raises=ValidationError)(_read_by(adapter))
    return checker


def _read_by(adapter: TypeAdapter[Any]) -> Callable[[object], bool]:
    def check(value: object) -> bool:
        if isinstance(value, str):  # a format says nothing about other types (JSON Schema's rule)
            adapter.validate_python(value)
        return True

    return check


def _validator_class(schema: JsonSchemaValue) -> type[jsonschema.protocols.Validator]:
    import jsonschema

    cls: type[jsonschema.protocols.Validator] = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )
    return cls


def _where(path: Any) -> str:
    return ".".join(str(p) for p in path)


def _lower(why: str) -> str:
    return why[:1].lower() + why[1:]


def _say(where: str, why: str) -> str:
    why = _lower(why)
    return f"{where}: {why}" if where else why


def _pydantic_problems(exc: ValidationError) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_say(_where(e["loc"]), e["msg"]) for e in exc.errors(include_url=False)))


def _validator_problems(validator: jsonschema.protocols.Validator, value: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_say(where, why) for where, why in _validator_pairs(validator, value)))


def _why(error: jsonschema.ValidationError) -> str:
    if error.validator == "format" and isinstance(error.cause, ValidationError):
        # Said as pydantic says it (`input should be a valid datetime, ...`), as the node would.
        return _lower(error.cause.errors(include_url=False)[0]["msg"])
    message = error.message
    if error.instance is None and message.startswith("None "):
        message = "null" + message[4:]  # JSON's word for it: the person sent null, not Python's None
    return _lower(message)


def _validator_pairs(validator: jsonschema.protocols.Validator, value: Any) -> list[tuple[str, str]]:
    """`(field path, why)` for every problem, in field order."""
    errors = sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path])
    return [pair for error in errors for pair in _error_pairs(error)]


def _error_pairs(error: jsonschema.ValidationError) -> list[tuple[str, str]]:
    import jsonschema

    where = list(error.absolute_path)
    if error.validator == "required" and isinstance(error.instance, dict):
        # Say it the way pydantic does, at the missing field's own path.
        required = error.validator_value if isinstance(error.validator_value, list) else []
        return [(_where([*where, name]), "field required") for name in required if name not in error.instance]
    if error.context:
        # anyOf / oneOf: the branch that came closest says more than "not valid under any"; a branch
        # of the value's own type (the object of `Address | None`) comes closer than a type mismatch.
        # Each of that branch's problems is said at its own path, as it would be without the union.
        fitting = [e for e in error.context if e.validator != "type"] or list(error.context)
        best = jsonschema.exceptions.best_match(fitting)
        if best is not None:
            while best.parent is not None and best.parent is not error:
                best = best.parent
            branch = best.relative_schema_path[0] if best.relative_schema_path else None
            chosen = [e for e in fitting if e.relative_schema_path and e.relative_schema_path[0] == branch] or [best]
            return [pair for e in chosen for pair in _error_pairs(e)]
    return [(_where(where), _why(error))]
