"""The prompt path: the cascade's steps in order, the step runner with its deadlines and
audit, the conversation the session already holds, and the block that is added."""
