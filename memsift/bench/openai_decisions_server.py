"""The OpenAI Decisions stand-in (`POST /v1/decisions`), as the `openai` client's types
describe the API: every request is checked against its schema (input messages, 1-400
predicate, choice or score questions, 2-255 choices, 2-10 levels) and a bad one answered as
the API does, a 400 with its `error` object; a good one gets the scripted probabilities, or a
refusal when one is scripted. The shared server is memsift.bench.decision_server."""

from __future__ import annotations

from typing import Any

from memsift.bench.decision_server import (
    FIXED_TOKENS,
    MAX_LEVELS,
    MAX_OPTIONS,
    DecisionServer,
    Invalid,
    check_fields,
    tokens_of,
)

OPENAI_MODEL = "gpt-6-luna"
MAX_OPENAI_QUESTIONS = 400


class OpenAIDecisionsServer(DecisionServer):
    """OpenAI Decisions as the `openai` client's types describe it."""

    path = "/v1/decisions"
    request_id_header = "x-request-id"

    @property
    def url(self) -> str:
        """The base_url a client uses: with the version (the client adds /decisions)."""
        return self.origin + "/v1"

    def state_of(self, body: Any) -> Any:
        return body.get("input") if isinstance(body, dict) else None

    def route(self, method, path, body, headers, fault):
        if not self.authorised(headers):
            return 401, _openai_error("Incorrect API key provided", "invalid_api_key")
        if method != "POST" or not path.rstrip("/").endswith(self.path):
            return 404, _openai_error(f"Unknown route {method} {path}", "unknown_url")
        if fault is not None and not fault.refuse:
            return fault.status, fault.body if fault.body is not None else \
                _openai_error("scripted", "server_error")
        try:
            validate_openai(body)
        except Invalid as exc:
            param = ".".join(str(p) for p in exc.loc)
            return 400, _openai_error(exc.msg, exc.kind, param)
        return 200, self._answer(body, refuse=fault is not None)

    def _answer(self, body: dict, *, refuse: bool) -> dict:
        answers = []
        for i, q in enumerate(body["questions"]):
            name = q.get("name")
            instructions = q["instructions"] if isinstance(q["instructions"], str) else ""
            if refuse and i == len(body["questions"]) - 1:
                answers.append({"type": "refusal", "name": name})
            elif q["type"] == "predicate":
                p = self.decide("yes", instructions, [True, False], body["input"])[0]
                answers.append({"type": "predicate", "name": name, "probability": p})
            elif q["type"] == "choice":
                values = [c["value"] for c in q["choices"]]
                probs = self.decide("choice", instructions, values, body["input"])
                best = max(range(len(values)), key=probs.__getitem__)
                answers.append({"type": "choice", "name": name, "choice": values[best],
                                "confidence": probs[best],
                                "probabilities": [{"value": v, "probability": p}
                                                  for v, p in zip(values, probs)]})
            else:
                labels = [level["label"] for level in q["levels"]]
                probs = self.decide("score", instructions, labels, body["input"])
                answers.append({"type": "score", "name": name, "confidence": max(probs),
                                "score": sum(i * p for i, p in enumerate(probs)),
                                "probabilities": [{"value": i, "label": label, "probability": p}
                                                  for i, (label, p) in enumerate(zip(labels,
                                                                                     probs))]})
        tokens = FIXED_TOKENS + tokens_of(body["input"]) + tokens_of(body["questions"])
        return {"answers": answers, "model": "gpt-6-luna-2026-10-06",
                "usage": {"input_tokens": tokens, "output_tokens": len(answers),
                          "total_tokens": tokens + len(answers),
                          "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 0}}}


def _openai_error(message: str, code: str, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param,
                      "code": code}}


MESSAGE_ROLES = ("user", "developer", "system", "assistant")


def validate_openai(body: Any) -> None:
    """Raise Invalid for anything POST /v1/decisions rejects."""
    if not isinstance(body, dict):
        raise Invalid([], "The body must be a JSON object", "invalid_type")
    check_fields(body, {"model", "input", "questions", "prompt_cache_key",
                        "prompt_cache_options", "safety_identifier"}, [])
    for required in ("model", "input", "questions"):
        if required not in body:
            raise Invalid([required], f"Missing required parameter: '{required}'",
                          "missing_required_parameter")
    if body["model"] != OPENAI_MODEL:
        raise Invalid(["model"], f"The model '{body['model']}' does not exist",
                      "model_not_found")
    _input_openai(body["input"])
    questions = body["questions"]
    if not isinstance(questions, list) or not 1 <= len(questions) <= MAX_OPENAI_QUESTIONS:
        raise Invalid(["questions"], f"Provide 1 to {MAX_OPENAI_QUESTIONS} questions",
                      "invalid_value")
    for i, q in enumerate(questions):
        _question_openai(q, ["questions", i])


def _input_openai(value: Any) -> None:
    if isinstance(value, str):
        return
    if not isinstance(value, list) or not value:
        raise Invalid(["input"], "input must be a string or a list of messages", "invalid_type")
    for i, message in enumerate(value):
        loc = ["input", i]
        if not isinstance(message, dict):
            raise Invalid(loc, "Each input item must be an object", "invalid_type")
        if message.get("type") not in (None, "message"):
            continue  # function calls and their outputs: memsift sends none
        check_fields(message, {"role", "content", "type", "phase"}, loc)
        if message.get("role") not in MESSAGE_ROLES:
            raise Invalid(loc + ["role"], f"role must be one of {', '.join(MESSAGE_ROLES)}",
                          "invalid_value")
        if not isinstance(message.get("content"), (str, list)):
            raise Invalid(loc + ["content"], "content must be a string or a list of parts",
                          "invalid_type")


def _question_openai(q: Any, loc: list) -> None:
    if not isinstance(q, dict):
        raise Invalid(loc, "Each question must be an object", "invalid_type")
    kind = q.get("type")
    extra = {"predicate": set(), "choice": {"choices"}, "score": {"levels"}}.get(kind)
    if extra is None:
        raise Invalid(loc + ["type"], "type must be predicate, choice or score",
                      "invalid_value")
    check_fields(q, {"type", "name", "instructions"} | extra, loc)
    if not isinstance(q.get("instructions"), (str, list)) or not q["instructions"]:
        raise Invalid(loc + ["instructions"], "Missing required parameter: 'instructions'",
                      "missing_required_parameter")
    if "name" in q and not isinstance(q["name"], str):
        raise Invalid(loc + ["name"], "name must be a string", "invalid_type")
    if kind == "choice":
        choices = q.get("choices")
        if not isinstance(choices, list) or not 2 <= len(choices) <= MAX_OPTIONS:
            raise Invalid(loc + ["choices"], f"Provide between 2 and {MAX_OPTIONS} choices",
                          "invalid_value")
        seen = set()
        for i, choice in enumerate(choices):
            if not isinstance(choice, dict) or not isinstance(choice.get("value"), (str, bool)):
                raise Invalid(loc + ["choices", i, "value"], "value must be a string or boolean",
                              "invalid_type")
            check_fields(choice, {"value", "description"}, loc + ["choices", i])
            key = (type(choice["value"]), choice["value"])
            if key in seen:
                raise Invalid(loc + ["choices", i], "Each choice must be unique",
                              "invalid_value")
            seen.add(key)
    elif kind == "score":
        levels = q.get("levels")
        if not isinstance(levels, list) or not 2 <= len(levels) <= MAX_LEVELS:
            raise Invalid(loc + ["levels"], f"Provide between 2 and {MAX_LEVELS} levels",
                          "invalid_value")
        for i, level in enumerate(levels):
            if not isinstance(level, dict) or not isinstance(level.get("label"), str):
                raise Invalid(loc + ["levels", i, "label"], "label must be a string",
                              "invalid_type")
            check_fields(level, {"label", "description"}, loc + ["levels", i])
