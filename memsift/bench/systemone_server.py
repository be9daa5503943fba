"""The System One stand-in (`POST /v1/systemone`, `GET /v1/models`), as TypeSafe documents
the API: every request is checked against its schema (question types, fields, 1-255 choice
options, 2-10 score levels, the token limits of a state) and a bad one answered as the API
does, a 422 with its `detail` list (a 400 with a `detail` map for an unknown model); a good
one gets the scripted probabilities and the usage System One bills. The shared server is
memsift.bench.decision_server."""

from __future__ import annotations

from typing import Any

from memsift.bench.decision_server import (
    FIXED_TOKENS,
    MAX_LEVELS,
    MAX_OPTIONS,
    OPTION_TOKENS,
    QUESTION_TOKENS,
    DecisionServer,
    Invalid,
    check_content,
    check_fields,
    tokens_of,
)

SYSTEMONE_MODELS = ("jev-latest", "jev-preview", "jev-1.13.0", "typesafe/jev-1.13")
STATE_TOKENS, REQUEST_TOKENS = 32_768, 65_536  # state + longest question; the whole request


class SystemOneServer(DecisionServer):
    """System One as TypeSafe documents it (typesafe-sdk's schemas, generated from the API's
    OpenAPI document)."""

    path = "/v1/systemone"
    request_id_header = "x-typesafe-request-id"

    @property
    def url(self) -> str:
        """The base_url a client uses: without the version (the client adds /v1/systemone)."""
        return self.origin

    def state_of(self, body: Any) -> Any:
        return body.get("state") if isinstance(body, dict) else None

    def route(self, method, path, body, headers, fault):
        if not self.authorised(headers):
            return 401, {"detail": "Invalid or missing API key"}
        if method == "GET" and path.rstrip("/").endswith("/v1/models"):
            return 200, {"models": [{"name": m, "description": "A system one model.",
                                     "release_date": "2026-09-15"} for m in SYSTEMONE_MODELS]}
        if method != "POST" or not path.rstrip("/").endswith(self.path):
            return 404, {"detail": "Not Found"}
        if fault is not None and not fault.refuse:
            return fault.status, fault.body if fault.body is not None else {"detail": "scripted"}
        if isinstance(body, dict) and isinstance(body.get("model"), str) \
                and body["model"] not in SYSTEMONE_MODELS:
            return 400, {"detail": {"error_type": "invalid_request",
                                    "message": f"Unknown model: {body['model']}"}}
        try:
            validate_systemone(body)
        except Invalid as exc:
            return 422, {"detail": [{"loc": ["body", *exc.loc], "msg": exc.msg,
                                     "type": exc.kind}]}
        return 200, self._answer(body)

    def _answer(self, body: dict) -> dict:
        answers, options_count = {}, 0
        for name, q in body["questions"].items():
            kind = q["type"]
            instructions = q.get("instructions") if isinstance(q.get("instructions"), str) else ""
            if kind == "choice":
                labels = list(q["criteria"])
                probs = self.decide("choice", instructions, labels, body["state"])
                best = max(range(len(labels)), key=probs.__getitem__)
                answers[name] = {"type": "choice", "choice": labels[best],
                                 "confidence": probs[best],
                                 "probabilities": dict(zip(labels, probs))}
                options_count += len(labels)
            elif kind == "noul":
                answers[name] = {"type": "noul",
                                 "noul": self.decide("yes", instructions, [True, False],
                                                     body["state"])[0]}
            elif kind == "score":
                levels = list(q["criteria"])
                probs = self.decide("score", instructions, levels, body["state"])
                answers[name] = {"type": "score",
                                 "score": sum(i * p for i, p in enumerate(probs)),
                                 "confidence": max(probs),
                                 "legend": {str(i): c for i, c in enumerate(levels)},
                                 "probabilities": {str(i): p for i, p in enumerate(probs)}}
            else:
                answers[name] = {"type": "box", "confidence": None,
                                 "box": {"top": 0.2, "bottom": 0.6, "left": 0.2, "right": 0.6}}
        questions = len(body["questions"])
        tokens = FIXED_TOKENS + QUESTION_TOKENS * questions + OPTION_TOKENS * options_count \
            + tokens_of(body["state"])
        return {"model": "jev-1.13.0" if body["model"] != "typesafe/jev-1.13" else body["model"],
                "answers": answers, "usage": {"input_tokens": tokens, "output_tokens": questions}}


def validate_systemone(body: Any) -> None:
    """Raise Invalid for anything POST /v1/systemone rejects."""
    if not isinstance(body, dict):
        raise Invalid([], "Input should be a valid dictionary", "model_attributes_type")
    check_fields(body, {"model", "state", "questions", "assets"}, [])
    for required in ("model", "state", "questions"):
        if required not in body:
            raise Invalid([required], "Field required", "missing")
    if not isinstance(body["model"], str):
        raise Invalid(["model"], "Input should be a valid string", "string_type")
    if not isinstance(body["state"], (str, dict, list)):
        raise Invalid(["state"], "Input should be a valid string, object or array", "type_error")
    questions = body["questions"]
    if not isinstance(questions, dict) or not questions:
        raise Invalid(["questions"], "Dictionary should have at least 1 item", "too_short")
    assets = body.get("assets")
    if assets is not None and (not isinstance(assets, dict) or not assets):
        raise Invalid(["assets"], "Dictionary should have at least 1 item", "too_short")
    longest = 0
    for name, q in questions.items():
        _question_systemone(q, ["questions", name], bool(assets))
        longest = max(longest, tokens_of(q))
    state_tokens = tokens_of(body["state"])
    if state_tokens + longest > STATE_TOKENS:
        raise Invalid(["state"], f"state and the longest question exceed {STATE_TOKENS} tokens")
    if state_tokens + sum(tokens_of(q) for q in questions.values()) > REQUEST_TOKENS:
        raise Invalid(["questions"], f"the request exceeds {REQUEST_TOKENS} tokens")


def _question_systemone(q: Any, loc: list, has_assets: bool) -> None:
    if not isinstance(q, dict):
        raise Invalid(loc, "Input should be a valid dictionary", "model_attributes_type")
    kind = q.get("type")
    if kind not in ("noul", "choice", "score", "box"):
        raise Invalid(loc + ["type"], "Input tag does not match any of the expected tags: "
                      "'noul', 'choice', 'score', 'box'", "union_tag_invalid")
    loc = loc + [kind]
    allowed = {"type", "instructions"} | ({"criteria"} if kind != "box" else set())
    check_fields(q, allowed, loc)
    check_content(q.get("instructions"), loc + ["instructions"])
    criteria = q.get("criteria")
    if kind == "noul":
        if criteria is not None:
            if not isinstance(criteria, dict):
                raise Invalid(loc + ["criteria"], "Input should be a valid dictionary")
            check_fields(criteria, {"true", "false"}, loc + ["criteria"])
            for side in ("true", "false"):
                check_content(criteria.get(side), loc + ["criteria", side])
        described = isinstance(criteria, dict) and any(criteria.get(s) for s in ("true", "false"))
        if q.get("instructions") is None and not described:
            raise Invalid(loc, "A noul needs instructions or a described outcome")
    elif kind == "choice":
        if not isinstance(criteria, dict) or not criteria:
            raise Invalid(loc + ["criteria"], "Dictionary should have at least 1 item",
                          "too_short")
        if len(criteria) > MAX_OPTIONS:
            raise Invalid(loc + ["criteria"], f"at most {MAX_OPTIONS} options", "too_long")
        for label, description in criteria.items():
            check_content(description, loc + ["criteria", label])
    elif kind == "score":
        if not isinstance(criteria, list) or not criteria:
            raise Invalid(loc + ["criteria"], "List should have at least 1 item", "too_short")
        if len(criteria) > MAX_LEVELS:
            raise Invalid(loc + ["criteria"], f"at most {MAX_LEVELS} levels", "too_long")
        for i, level in enumerate(criteria):
            check_content(level, loc + ["criteria", i], optional=False)
    elif not has_assets:
        raise Invalid(loc, "A box question needs an image asset")
