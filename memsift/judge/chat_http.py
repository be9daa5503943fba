"""Chat completions over plain httpx: the decision model's transport on the prompt path.

The hook is a fresh process for every prompt, and importing the `openai` client costs over a
second of CPU before any request is sent (httpx alone about 0.3 s): more than the kind step's
whole budget. The judge's questions need one POST and a few fields of the reply, so this
module sends that request itself: the same body, the same headers, the reply read through the
same attribute names (`choices[0].message.content`, `choices[0].logprobs.content[0]...`), and
its errors as the same `JudgeError` reasons the openai client's errors become. It never imports
`openai`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from memsift.httppool import Pool, httpx
from memsift.judge.base import JudgeError

CHAT_PATH = "chat/completions"  # relative: base_url ends in /v1 (or the server's prefix)
AUTH_STATUSES = (401, 403)  # the key is missing, wrong or not allowed this model


class Fields:
    """A JSON object read by attribute, as the openai client's reply models are read. A field
    the server left out reads as None, so a short reply is a bad answer, not a crash."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        return as_fields(self._data.get(name))

    def __repr__(self) -> str:
        return f"Fields({self._data!r})"


def as_fields(value: Any) -> Any:
    if isinstance(value, Mapping):
        return Fields(value)
    if isinstance(value, list):
        return [as_fields(v) for v in value]
    return value


def env_headers(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The headers the openai client adds from its environment (organisation, project,
    OPENAI_CUSTOM_HEADERS as "Name: value" lines), so both transports send the same. The key
    stays memsift's own: a custom Authorization line is not sent."""
    headers: dict[str, str] = {}
    if environ.get("OPENAI_ORG_ID"):
        headers["OpenAI-Organization"] = environ["OPENAI_ORG_ID"]
    if environ.get("OPENAI_PROJECT_ID"):
        headers["OpenAI-Project"] = environ["OPENAI_PROJECT_ID"]
    for line in environ.get("OPENAI_CUSTOM_HEADERS", "").split("\n"):
        name, colon, value = line.partition(":")
        if colon and name.strip() and name.strip().lower() != "authorization":
            headers[name.strip()] = value.strip()
    return headers


class ChatHTTP:
    """POST chat/completions with httpx; one client (and its connection pool) per judge."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        timeout_s: float,
        *,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url
        headers = {
            **env_headers(),
            "Authorization": f"Bearer {api_key}",
            "Accept": "application/json",
        }
        try:
            self._client = Pool(
                base_url=base_url,
                headers=headers,
                timeout=httpx.Timeout(timeout_s),
                transport=transport,
            )
        except httpx.InvalidURL as exc:
            raise JudgeError(f"llm.base_url {base_url!r} is not a URL", "config") from exc

    def complete(self, request: Mapping[str, Any], timeout_s: float) -> Any:
        """One chat completion; the reply as `Fields`, or a JudgeError with its reason."""
        response = self._post(request, timeout_s)
        if response.status_code in AUTH_STATUSES:
            raise JudgeError(f"{self.base_url} refused the key ({response.status_code})", "auth")
        if not response.is_success:
            raise JudgeError(f"{self.base_url} answered {response.status_code}", "server")
        return self._decode(response)

    def close(self) -> None:
        self._client.close()

    def _post(self, request: Mapping[str, Any], timeout_s: float) -> httpx.Response:
        try:
            return self._client.post(CHAT_PATH, json=request, timeout=httpx.Timeout(timeout_s))
        except httpx.TimeoutException as exc:
            raise JudgeError(
                f"no answer from {self.base_url} within {timeout_s:.2f}s", "timeout") from exc
        except (httpx.TransportError, httpx.InvalidURL) as exc:
            # no connection, a dropped one, a scheme httpx cannot speak: all unreachable
            raise JudgeError(f"cannot reach {self.base_url}", "refused") from exc

    def _decode(self, response: httpx.Response) -> Any:
        try:
            data = response.json()
        except ValueError as exc:  # not JSON, or not UTF-8
            raise JudgeError(f"unreadable reply from {self.base_url}", "bad_reply") from exc
        if not isinstance(data, dict):
            raise JudgeError(f"unreadable reply from {self.base_url}", "bad_reply")
        return Fields(data)
