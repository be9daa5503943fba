"""Redaction: every secret in the corpus is replaced, ordinary text is left byte for byte."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from memsift.cli import cli
from memsift.redact import redact

DATA = Path(__file__).parent / "data"
_MARKED = re.compile(r"«(.+?)»", re.DOTALL)


def load_corpus() -> tuple[str, list[str]]:
    """The corpus text without its «» markers, and the secrets the markers wrapped."""
    raw = (DATA / "secrets_corpus.txt").read_text(encoding="utf-8")
    return _MARKED.sub(lambda m: m.group(1), raw), _MARKED.findall(raw)


def test_corpus_holds_many_secrets_of_every_kind():
    text, secrets = load_corpus()
    assert len(secrets) >= 40
    _, findings = redact(text)
    kinds = {f.kind for f in findings}
    for kind in ("aws_access_key", "aws_secret_key", "openai_key", "anthropic_key",
                 "github_token", "stripe_key", "slack_token", "slack_webhook", "jwt",
                 "private_key", "url_password", "password", "gcp_api_key", "azure_key"):
        assert kind in kinds


def test_no_secret_of_the_corpus_survives_redaction():
    text, secrets = load_corpus()
    cleaned, _ = redact(text)
    survivors = [s for s in secrets if s in cleaned]
    assert survivors == []
    # not even a long piece of one (a partly replaced key still leaks)
    for secret in secrets:
        for piece in (secret[i:i + 16] for i in range(0, max(1, len(secret) - 16), 8)):
            if len(piece) == 16 and not piece.startswith(("-----", "sk-proj-", "sk-ant-api03")):
                assert piece not in cleaned, (secret, piece)


def test_redaction_keeps_the_words_around_every_secret():
    raw = (DATA / "secrets_corpus.txt").read_text(encoding="utf-8")
    cleaned, _ = redact(load_corpus()[0])
    outside = _MARKED.sub(" ", raw)
    for word in set(re.findall(r"\b[a-z]{5,}\b", outside)):
        assert word in cleaned
    assert "after the key, the text goes on." in cleaned
    assert "[REDACTED:private_key]" in cleaned


def test_ordinary_text_is_left_byte_for_byte():
    ordinary = (DATA / "secrets_ordinary.txt").read_text(encoding="utf-8")
    cleaned, findings = redact(ordinary)
    assert findings == []
    assert cleaned == ordinary


def test_placeholder_names_the_kind_of_secret():
    cleaned, _ = redact("export GITHUB_TOKEN=ghp_" + "a1B2c3D4e5" * 4)
    assert cleaned == "export GITHUB_TOKEN=[REDACTED:github_token]"


def test_password_in_a_url_keeps_user_and_host():
    cleaned, _ = redact("clone https://deploy:Zq8xLm2Pw9@git.example.com/repo.git")
    assert cleaned == "clone https://deploy:[REDACTED:url_password]@git.example.com/repo.git"


def test_redact_command_reads_stdin_and_writes_the_redacted_text():
    text, secrets = load_corpus()
    result = CliRunner().invoke(cli, ["redact"], input=text)
    assert result.exit_code == 0
    assert "[REDACTED:" in result.output
    assert not [s for s in secrets if s in result.output]


def test_weak_passwords_given_to_a_password_name_are_redacted_too():
    for line, kept in (("password: secret", "password: "), ("DB_PASS=summer", "DB_PASS="),
                       ('{"pwd": "test1"}', '{"pwd": "')):
        cleaned, _ = redact(line)
        assert cleaned.startswith(kept) and "[REDACTED:password]" in cleaned


def test_words_about_passwords_are_not_taken_for_passwords():
    for line in ("password: required", "Password: ********", "the password is in the vault",
                 "password = os.environ['DB_PASSWORD']", "password: ${DB_PASSWORD}"):
        assert redact(line) == (line, [])


# Fresh secrets said in a sentence, the way people type them into a prompt or a chat.
SENTENCES = ("my password is {}", "the password is {}.", "pw: {}", "the token for staging is {}",
             "The password for the admin account is {} (rotate it)", "our api key was {}",
             "the secret key is {}, keep it out of git")
_FRESH = st.text(alphabet="abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789!#%&*+",
                 min_size=6, max_size=20).filter(lambda v: any(c.isdigit() for c in v))


@given(template=st.sampled_from(SENTENCES), secret=_FRESH)
def test_a_fresh_secret_given_in_a_plain_sentence_is_redacted(template, secret):
    cleaned, findings = redact(template.format(secret))
    assert secret not in cleaned and findings
    assert cleaned.startswith(template.split("{}")[0])  # the sentence still reads


def test_a_password_said_in_a_sentence_is_redacted():
    assert redact("my password is hunter2")[0] == "my password is [REDACTED:password]"
    assert redact("pw: hunter2")[0] == "pw: [REDACTED:password]"
    assert redact("the token for staging is x7Kd9QpL2")[0] == (
        "the token for staging is [REDACTED:token]")
