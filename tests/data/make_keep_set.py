"""Writes memsift/data/keep_exchanges.jsonl: labelled exchanges for the keep decision.

Run once (python tests/data/make_keep_set.py); the output is committed. Each exchange is a
user message and the assistant's reply across many stacks, labelled keep=1 when it would save
repeating work if the subject came back (a choice and its reason, a constraint, an incident and
its fix, a procedure) and keep=0 otherwise (reactions, one-off tasks, UI details, general
knowledge, actions on finished work). Every template has an id; the held-apart test part is
whole templates the training part never saw, so the numbers measure wording it has not met.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "memsift" / "data" / "keep_exchanges.jsonl"

STACKS = [
    {"lang": "Python", "web": "FastAPI", "db": "Postgres", "alt_db": "SQLite", "queue": "Celery",
         "cache": "Redis", "test": "pytest", "pkg": "uv", "lint": "ruff", "orm": "SQLAlchemy",
         "err": "sqlalchemy.exc.OperationalError", "err2": "RecursionError", "cloud": "AWS Lambda",
         "file": "app/models.py", "fn": "load_orders", "comp": "the importer", "infra": "Terraform"},
    {"lang": "TypeScript", "web": "Next.js", "db": "Postgres", "alt_db": "MongoDB", "queue": "BullMQ",
         "cache": "Redis", "test": "vitest", "pkg": "pnpm", "lint": "eslint", "orm": "Prisma",
         "err": "PrismaClientKnownRequestError P2002", "err2": "ERR_REQUIRE_ESM", "cloud": "Vercel",
         "file": "src/lib/db.ts", "fn": "getSession", "comp": "the checkout page", "infra": "Pulumi"},
    {"lang": "Go", "web": "chi", "db": "MySQL", "alt_db": "Postgres", "queue": "NATS", "cache": "memcached",
         "test": "go test", "pkg": "go modules", "lint": "golangci-lint", "orm": "sqlc",
         "err": "context deadline exceeded", "err2": "fatal error: concurrent map writes",
         "cloud": "GKE", "file": "internal/store/store.go", "fn": "ListInvoices", "comp": "the billing worker",
         "infra": "Helm"},
    {"lang": "Rust", "web": "axum", "db": "Postgres", "alt_db": "SQLite", "queue": "Kafka", "cache": "moka",
         "test": "cargo nextest", "pkg": "cargo", "lint": "clippy", "orm": "sqlx",
         "err": "error[E0502]: cannot borrow as mutable", "err2": "thread 'main' panicked at 'index out of bounds'",
         "cloud": "Fly.io", "file": "src/handlers/upload.rs", "fn": "parse_manifest", "comp": "the upload service",
         "infra": "Docker Compose"},
    {"lang": "Java", "web": "Spring Boot", "db": "Oracle", "alt_db": "H2", "queue": "RabbitMQ",
         "cache": "Caffeine", "test": "JUnit 5", "pkg": "Gradle", "lint": "Checkstyle", "orm": "Hibernate",
         "err": "LazyInitializationException", "err2": "OutOfMemoryError: Metaspace", "cloud": "EKS",
         "file": "src/main/java/com/acme/OrderService.java", "fn": "reconcileLedger",
         "comp": "the ledger job", "infra": "Ansible"},
    {"lang": "Ruby", "web": "Rails", "db": "Postgres", "alt_db": "MySQL", "queue": "Sidekiq", "cache": "Redis",
         "test": "RSpec", "pkg": "Bundler", "lint": "RuboCop", "orm": "ActiveRecord",
         "err": "ActiveRecord::Deadlocked", "err2": "PG::UniqueViolation", "cloud": "Heroku",
         "file": "app/jobs/sync_job.rb", "fn": "sync_accounts", "comp": "the CRM sync", "infra": "Kamal"},
    {"lang": "Kotlin", "web": "Ktor", "db": "Postgres", "alt_db": "Exposed in-memory", "queue": "Pub/Sub",
         "cache": "Redis", "test": "Kotest", "pkg": "Gradle", "lint": "detekt", "orm": "Exposed",
         "err": "JobCancellationException", "err2": "kotlinx.serialization.MissingFieldException",
         "cloud": "Cloud Run", "file": "server/src/Routes.kt", "fn": "handleWebhook", "comp": "the webhook receiver",
         "infra": "Terraform"},
    {"lang": "C#", "web": "ASP.NET Core", "db": "SQL Server", "alt_db": "SQLite", "queue": "Azure Service Bus",
         "cache": "Redis", "test": "xUnit", "pkg": "NuGet", "lint": "dotnet format", "orm": "EF Core",
         "err": "DbUpdateConcurrencyException", "err2": "TaskCanceledException", "cloud": "Azure App Service",
         "file": "Api/Services/InvoiceService.cs", "fn": "ApplyDiscounts", "comp": "the invoice API",
         "infra": "Bicep"},
    {"lang": "Elixir", "web": "Phoenix", "db": "Postgres", "alt_db": "ETS", "queue": "Oban", "cache": "Cachex",
         "test": "ExUnit", "pkg": "Hex", "lint": "Credo", "orm": "Ecto",
         "err": "DBConnection.ConnectionError", "err2": "FunctionClauseError", "cloud": "Fly.io",
         "file": "lib/shop/orders.ex", "fn": "place_order", "comp": "the order pipeline", "infra": "Docker"},
    {"lang": "Swift", "web": "Vapor", "db": "Postgres", "alt_db": "Core Data", "queue": "Redis queues",
         "cache": "NSCache", "test": "XCTest", "pkg": "SwiftPM", "lint": "SwiftLint", "orm": "Fluent",
         "err": "EXC_BAD_ACCESS", "err2": "Fatal error: Unexpectedly found nil", "cloud": "TestFlight",
         "file": "Sources/App/Sync.swift", "fn": "mergeChanges", "comp": "the offline sync", "infra": "Xcode Cloud"},
    {"lang": "PHP", "web": "Laravel", "db": "MySQL", "alt_db": "SQLite", "queue": "Horizon", "cache": "Redis",
         "test": "PHPUnit", "pkg": "Composer", "lint": "PHPStan", "orm": "Eloquent",
         "err": "SQLSTATE[40001] Serialization failure", "err2": "Allowed memory size exhausted",
         "cloud": "Forge", "file": "app/Http/Controllers/CartController.php", "fn": "applyCoupon",
         "comp": "the cart", "infra": "Envoyer"},
    {"lang": "Python", "web": "Django", "db": "Postgres", "alt_db": "SQLite", "queue": "RQ", "cache": "Memcached",
         "test": "pytest-django", "pkg": "poetry", "lint": "flake8", "orm": "the Django ORM",
         "err": "django.db.utils.IntegrityError", "err2": "SynchronousOnlyOperation", "cloud": "Render",
         "file": "billing/views.py", "fn": "export_csv", "comp": "the admin export", "infra": "GitHub Actions"},
]

# ---- keep: a technical choice and its reason -------------------------------------------------
KEEP = {
    "choice_db": ("Should we keep {alt_db} for {comp} or move to {db}?",
                  ("Move to {db}. {alt_db} serialises writers, and {comp} runs several workers that "
                  "write at once, so we hit lock timeouts. I changed the connection settings in "
                  "{file} and kept {alt_db} only for the unit tests.")),
    "choice_lib": ("Which {lang} HTTP client should {comp} use?",
                   ("I went with the one already used by {web} instead of adding a second library, "
                   "because it shares the connection pool and our retry middleware. Adding another "
                   "client would mean two timeout configurations to keep in sync.")),
    "choice_queue": ("Do we need {queue} for the emails or can we send them inline?",
                     ("Use {queue}. Sending inline blocked the request for up to 8 seconds when the "
                     "mail provider was slow; the job now retries three times with backoff and the "
                     "endpoint returns at once.")),
    "choice_pkg": ("Why is the lockfile for {pkg} checked in?",
                   ("We decided to commit it so that CI and every laptop resolve the exact same "
                   "versions; last month an unpinned minor release of the {lint} plugin broke "
                   "the build on CI only.")),
    "choice_cache": ("Can we cache {fn} results?",
                     ("Yes, but only in {cache} with a 60 second TTL, never in process memory: we "
                     "run four replicas and an in-process cache served stale prices after an update.")),
    "choice_orm": ("Should {fn} use raw SQL or {orm}?",
                   ("Raw SQL for this one. {orm} generated an N+1 query over the line items and the "
                   "page took 4 s; the hand-written join runs in 40 ms. The rest of {file} stays on "
                   "{orm} for consistency.")),
    "choice_infra": ("Where should the staging config live?",
                     ("In {infra}, not in the dashboard. Settings edited by hand in the {cloud} "
                     "console drifted twice and nobody could tell what changed, so everything is "
                     "now declared there and reviewed in pull requests.")),
    "choice_ids": ("Integer ids or UUIDs for the new table?",
                   ("UUIDv7. The ids are created on the client before sync in {comp}, so "
                   "sequential integers would collide, and v7 keeps the index insert order "
                   "roughly sorted unlike v4.")),
    "choice_auth": ("Session cookies or JWTs for the API?",
                    ("Session cookies stored in {cache}. We need to revoke access immediately when "
                    "an account is closed, and stateless JWTs can't be revoked before they expire.")),
    "choice_test": ("Should the integration tests hit a real {db}?",
                    ("Yes, a throwaway {db} container per run. The {alt_db} stand-in accepted "
                    "queries that {db} rejects, so tests passed and production failed.")),
    "choice_time": ("What timezone should we store timestamps in?",
                    ("UTC everywhere in {db}, converted only at display time. The report job in "
                    "{comp} double-counted an hour at the DST switch when we stored local time.")),
    "choice_money": ("Float or decimal for the amounts in {fn}?",
                     ("Integer cents. Floats produced 0.01 rounding differences against the "
                     "payment provider's totals and the reconciliation flagged them as mismatches.")),
    # ---- a constraint that will cause trouble -----------------------------------------------
    "constraint_version": ("Can I upgrade {web} to the latest major?",
                           ("Not yet: the latest major drops support for the {lang} version our "
                           "{cloud} runtime is pinned to. We must stay on the current major until "
                           "the runtime is upgraded, otherwise the deploy fails at start-up.")),
    "constraint_order": ("Why does the migration fail on a fresh database?",
                         ("The migrations must run before the seed step: the seed inserts rows that "
                         "reference a column added by the last migration. Never reorder those two "
                         "steps in the deploy script.")),
    "constraint_env": ("The tests pass locally but not on CI, any idea?",
                       ("CI runs with TZ unset and a read-only home directory. {fn} writes a cache "
                       "file under home, so on CI it must write to the temp folder instead; I "
                       "changed it to honour TMPDIR.")),
    "constraint_api": ("Can we call the partner API from the browser?",
                       ("No. Their API does not send CORS headers and the key must stay server "
                       "side, so every call goes through our proxy route in {file}. Keep it that way.")),
    "constraint_limit": ("Why is {comp} batching by 500?",
                         ("{db} rejects statements with more than 65535 bind parameters, and each row "
                         "has 12 columns, so 500 rows is safely under the limit. Bigger batches fail "
                         "with a protocol error.")),
    "constraint_lock": ("Is it safe to run two {queue} workers on {comp}?",
                        ("Only with the advisory lock in {fn}. Without it both workers pick the same "
                        "account and charge it twice; the lock must always be taken before reading "
                        "the balance.")),
    # ---- an incident and its fix ------------------------------------------------------------
    "incident_err": ("{comp} crashes with {err} since this morning",
                     ("Root cause: the connection pool was exhausted because {fn} opened a new "
                     "session per item and never closed it. The fix was to reuse one session per "
                     "batch; I added a test that runs 1000 items and checks the pool size.")),
    "incident_err2": ("I'm getting {err2} when I run {fn}",
                      ("That came from the recursive walk over the category tree, which has a cycle "
                      "since yesterday's import. I replaced the recursion with an iterative walk "
                      "that tracks visited ids, so a cycle can no longer hang or crash it.")),
    "incident_deploy": ("The deploy to {cloud} failed again",
                        ("It failed because the build image ran out of disk while installing "
                        "dependencies with {pkg}. The fix was to clear the {pkg} cache in the same "
                        "layer; if it fails the same way again, check the layer size first.")),
    "incident_flaky": ("{test} is flaky on the {fn} test",
                       ("The test depended on dict ordering from {cache} and on the wall clock. I "
                       "froze the clock and sorted the keys before comparing; it passed 200 runs in "
                       "a row after that.")),
    "incident_perf": ("The dashboard got really slow after the last release",
                      ("The new filter disabled the index on created_at because it wrapped the "
                      "column in a function. I rewrote the condition as a range on the raw column "
                      "and the query went from 3 s back to 30 ms.")),
    "incident_memory": ("{comp} keeps getting OOM-killed",
                        ("It loaded the whole export into memory before writing. I switched it to "
                        "stream rows in chunks of 1000; memory stays under 200 MB now. Watch for "
                        "this pattern in the other exports.")),
    "incident_dup": ("Customers got the email twice",
                     ("{queue} retried the job after a timeout even though the send had succeeded. "
                     "The fix was an idempotency key per email stored in {db}; the job now checks "
                     "it before sending.")),
    "incident_cert": ("Webhooks from the provider stopped arriving",
                      ("Their new certificate chain wasn't trusted by our old CA bundle in the "
                      "container image. Updating the ca-certificates package in the Dockerfile "
                      "fixed it; the image needs a rebuild whenever that happens.")),
    # ---- a procedure ---------------------------------------------------------------------
    "proc_release": ("How do I cut a release?",
                     ("Bump the version in the manifest, run `{pkg}` to refresh the lockfile, tag "
                     "vX.Y.Z on main and push the tag; CI builds and publishes from the tag. "
                     "Never publish from a laptop, the signing key only exists in CI.")),
    "proc_migration": ("How do we add a column without downtime?",
                       ("Three steps: add the column as nullable, deploy code that writes both old "
                       "and new, backfill in batches, then make it NOT NULL in a later release. "
                       "Doing it in one migration locks the table on {db}.")),
    "proc_local": ("How do I get the project running locally?",
                   ("Start {db} and {cache} with the compose file, copy .env.example to .env, run "
                   "the migrations, then start {web} in dev mode. The seed script needs the "
                   "migrations first.")),
    "proc_debug": ("How did you reproduce the {err} locally?",
                   ("Set the pool size to 1 in the env, run two {queue} workers against the same "
                   "database and trigger {fn} twice; it reproduces in a few seconds. That's the "
                   "quickest way to check a fix.")),
    "proc_rotate": ("How do we rotate the database credentials?",
                    ("Create the new user in {db}, update the secret in the vault, restart the "
                    "{cloud} services one by one, and only then drop the old user. Dropping it "
                    "first takes the site down.")),
    "proc_profile": ("What's the way to profile {comp}?",
                     ("Run it with the profiling env flag set and open the flame graph it writes "
                     "to ./profiles; the hot path is usually serialisation in {fn}. Don't profile "
                     "on CI, the numbers are meaningless there.")),
}

# ---- drop: reactions, one-off tasks, UI details, general knowledge, actions -------------------
DROP = {
    "react_thanks": ("thanks, that works", "Glad it helped! Let me know if anything else comes up."),
    "react_ok": ("ok great", "Great. Anything else you'd like me to look at in {comp}?"),
    "react_wrong": ("no that's wrong, try again",
                    "Sorry about that. Let me take another look at {fn} and propose something else."),
    "react_nice": ("nice, looks much cleaner now",
                   "Thanks! The function reads more easily now that the branches are flattened."),
    "react_perfect": ("perfect", "Happy to help."),
    "react_hmm": ("hmm, not sure about this", "No problem, we can leave it as it was. What would you prefer?"),
    "task_rename": ("rename {fn} to something clearer",
                    "Done: renamed it to fetch_{fn} and updated the 4 call sites in {file}."),
    "task_docstring": ("add a docstring to {fn}",
                       "Added a one-line docstring describing the arguments and the return value."),
    "task_typo": ("fix the typo in the README intro", "Fixed: 'recieve' is now 'receive'."),
    "task_format": ("run {lint} and fix what it says",
                    "Ran {lint}; fixed 7 warnings (unused imports and a long line) in {file}."),
    "task_test": ("write a test for {fn}",
                  "Added a {test} test that calls {fn} with two orders and checks the total. It passes."),
    "task_log": ("add a log line when {fn} starts",
                 "Added an info log at the start of {fn} with the batch size."),
    "task_move": ("move the helper into utils",
                  "Moved it to utils and fixed the imports because the old module no longer exports it."),
    "task_because": ("change the default page size to 50",
                     "Changed it to 50 because you asked for more rows per page; the constant is in {file}."),
    "task_explain": ("what does {fn} do?",
                     ("It loads the records for the current user, filters out archived ones and "
                     "returns them sorted by date. Nothing unusual in it.")),
    "task_summary": ("summarize the diff for me",
                     ("The diff renames two variables in {file}, adds a docstring and removes an "
                     "unused import. No behaviour changes.")),
    "ui_color": ("make the submit button blue", "Changed the button colour to the primary blue in the stylesheet."),
    "ui_spacing": ("the header needs more padding",
                   "Increased the header padding from 8px to 16px; it looks less cramped now."),
    "ui_font": ("use a bigger font on the pricing page",
                "Bumped the body font to 18px on the pricing page only."),
    "ui_icon": ("swap the trash icon for an X", "Done, it uses the close icon now."),
    "ui_decided": ("should the modal close on outside click?",
                   ("I decided to let it close on outside click since that's what you described; "
                   "it's a one-line change in the modal props.")),
    "ui_copy": ("change the empty state text to 'No orders yet'",
                "Updated the empty state copy in {comp}."),
    "general_diff": ("what's the difference between a process and a thread?",
                     ("Threads share one address space inside a process; processes each have their "
                     "own memory, so they're isolated but costlier to start and to communicate between.")),
    "general_lang": ("how do list comprehensions work in Python?",
                     ("They build a list from an iterable in one expression: [f(x) for x in xs if "
                     "cond(x)]. They're usually faster than an explicit loop with append.")),
    "general_http": ("what does HTTP 409 mean?",
                     ("Conflict: the request conflicts with the current state of the resource, for "
                     "example an edit based on an outdated version.")),
    "general_git": ("how do I undo my last local commit?",
                    "git reset --soft HEAD~1 keeps your changes staged; --hard throws them away."),
    "action_tests": ("run the tests", "All 214 {test} tests passed in 38 s."),
    "action_commit": ("commit this", "Committed as 'Fix pagination on the orders list'."),
    "action_push": ("push it", "Pushed to origin/main."),
    "action_pr": ("open a PR for this", "Opened the pull request with the summary of the change."),
    "conv_scroll": ("what did you say earlier about the tests?",
                    "I said the tests for {fn} pass; I haven't touched the others."),
    "conv_plan": ("let's do the next item on the list",
                  "Sure, the next one is the CSV export. Starting on it now."),
}

# Rewordings so the same template is not always the same text.
PREFIX_USER = ["", "", "quick question: ", "hey, ", "ok so ", "one more thing: "]
PREFIX_ASSISTANT = ["", "", "", "Sure. ", "Okay. ", "Looked into it. "]


def expand(templates, label, rng, per_template):
    rows = []
    for tid, (user, reply) in templates.items():
        for stack in rng.sample(STACKS, per_template):
            rows.append({
                "template": tid,
                "user": rng.choice(PREFIX_USER) + user.format(**stack),
                "assistant": rng.choice(PREFIX_ASSISTANT) + reply.format(**stack),
                "stack": stack["lang"] + "/" + stack["web"],
                "keep": label,
            })
    return rows


def main() -> None:
    rng = random.Random(6)
    rows = expand(KEEP, 1, rng, 8) + expand(DROP, 0, rng, 8)
    seen, unique = set(), []
    for row in rows:  # templates without stack slots can repeat word for word
        if (row["user"], row["assistant"]) not in seen:
            seen.add((row["user"], row["assistant"]))
            unique.append(row)
    rows = unique
    rng.shuffle(rows)
    OUT.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                   encoding="utf-8")
    print(len(rows), "exchanges,", sum(r["keep"] for r in rows), "to keep")


if __name__ == "__main__":
    main()
