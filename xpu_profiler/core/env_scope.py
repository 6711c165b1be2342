"""Environment variables set for a while, then put back as they were."""

from __future__ import annotations

import os


class EnvScope:
    """``set`` / ``setdefault`` like ``os.environ``, remembering the first value each
    variable had; ``restore()`` (or leaving the ``with`` block) puts every one back."""

    def __init__(self) -> None:
        self._saved: dict[str, str | None] = {}

    def _save(self, key: str) -> None:
        if key not in self._saved:
            self._saved[key] = os.environ.get(key)

    def set(self, key: str, value: str) -> None:
        self._save(key)
        os.environ[key] = value

    def setdefault(self, key: str, value: str) -> str:
        self._save(key)
        return os.environ.setdefault(key, value)

    def restore(self) -> None:
        saved, self._saved = self._saved, {}
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    def __enter__(self) -> EnvScope:
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()
