"""SQL text -> tokens, and the cursor both of keyguard's SQL readers walk them with.

Flink type text (`keyguard.formats.sqltypes`) and a `CREATE TABLE` statement
(`keyguard.formats.flink_ddl`) share their lexical rules: words, backtick identifiers (a doubled
backtick inside), `'it''s'` strings, punctuation. Each reader brings its own token pattern and
its own errors (a caret under the type text, or the statement's line and column with its
secrets masked); what they share is here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NoReturn

__all__ = ["Tok", "TokenCursor", "tokenize"]


@dataclass(frozen=True)
class Tok:
    kind: str  # a group name of the reader's pattern (word, quoted, string, punct, ...) or end
    text: str
    pos: int

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else ""

    def is_punct(self, p: str) -> bool:
        return self.kind == "punct" and self.text == p

    @property
    def string_value(self) -> str:
        """The value of a `'quoted string'`, its doubled quotes undone."""
        return self.text[1:-1].replace("''", "'")


def tokenize(text: str, pattern: re.Pattern[str],
             skip: frozenset[str] = frozenset({"ws"})) -> tuple[list[Tok], int | None]:
    """The tokens of `text` whose kind is not in `skip`, then an `end` token; with the offset
    of the first character no token of `pattern` matches (None when the whole text is read).
    On such a character the tokens stop before it: the reader says what is wrong there."""
    toks: list[Tok] = []
    pos = 0
    while pos < len(text):
        m = pattern.match(text, pos)
        if m is None:
            return toks, pos
        kind = m.lastgroup or ""
        if kind not in skip:
            toks.append(Tok(kind, m.group(), pos))
        pos = m.end()
    toks.append(Tok("end", "", len(text)))
    return toks, None


class TokenCursor:
    """A position in a token list, with the accept/expect steps of a recursive-descent reader.

    A reader sets `toks` and `i` and says how it fails (`fail`); every message names what it
    found, the end of the input as `end_name`.
    """

    end_name = "the end of the text"
    toks: list[Tok]
    i: int

    def fail(self, message: str, pos: int | None = None, *,
             hint: str | None = None) -> NoReturn:
        """Raise the reader's error for `message` at `pos` (the current token's when None)."""
        raise NotImplementedError

    @property
    def tok(self) -> Tok:
        return self.toks[self.i]

    def found(self) -> str:
        """The current token as an error message names it."""
        return self.end_name if self.tok.kind == "end" else repr(self.tok.text)

    def advance(self) -> Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def at_word(self, *words: str) -> bool:
        return self.tok.upper in words

    def at_punct(self, p: str) -> bool:
        return self.tok.is_punct(p)

    def accept_word(self, *words: str) -> bool:
        if self.at_word(*words):
            self.i += 1
            return True
        return False

    def accept_punct(self, p: str) -> bool:
        if self.at_punct(p):
            self.i += 1
            return True
        return False

    def expect_word(self, word: str, hint: str | None = None) -> Tok:
        if not self.at_word(word):
            self.fail(f"expected {word} but found {self.found()}", hint=hint)
        return self.advance()

    def expect_punct(self, p: str) -> Tok:
        if not self.at_punct(p):
            self.fail(f"expected {p!r} but found {self.found()}")
        return self.advance()

    def identifier(self, what: str, *, empty: str | None = None) -> tuple[str, int]:
        """A word or a `quoted identifier`, and its offset; `what` names it in the error,
        `empty` is the message for a quoted empty name (`empty <what>` by default)."""
        tok = self.tok
        if tok.kind == "quoted":
            self.advance()
            name = tok.text[1:-1].replace("``", "`")
            if not name:
                self.fail(empty or f"empty {what}", tok.pos)
            return name, tok.pos
        if tok.kind == "word":
            return self.advance().text, tok.pos
        self.fail(f"expected {what} but found {self.found()}")
