"""Java regular expressions (``java.util.regex``, what Spark's regex functions compile) as RE2
patterns (what DuckDB's ``regexp_*`` functions compile), or a clear error.

No maintained library translates between the two dialects, so this is a small recursive-descent
parser of Java's syntax that writes RE2's. Where the dialects spell the same thing differently it
rewrites (``(?<name>`` → ``(?P<name>``, ``\\uFFFF`` → ``\\x{FFFF}``, ``\\p{Alpha}`` → ``[a-zA-Z]``,
``(?x)`` comments removed); where they mean different things it writes Java's meaning (``.`` does
not match ``\\r``, ``\\u0085``, ``\\u2028``, ``\\u2029`` in Java; ``\\s`` includes ``\\x0B``); what
RE2 cannot do at all (lookaround, backreferences, possessive quantifiers, atomic groups, ``\\G``,
``\\Z``, ``(?U)``, nested classes and ``&&``) raises ``JavaOnlyFeature``, and Java's own syntax
errors raise ``JavaSyntaxError`` — never a pattern that silently matches something else.

Known remaining differences, both about line terminators other than ``\\n``: Java's ``$`` (without
``(?m)``) also matches before a final line terminator, RE2's only at the very end; and Java's
``(?i)`` folds ASCII letters only unless ``(?u)`` is given, RE2 folds all of Unicode.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LINE_TERMINATORS = r"\n\r\x{85}\x{2028}\x{2029}"
JAVA_SPACE = r"\t\n\x0B\f\r "  # Java's \s: [ \t\n\x0B\f\r]
NOT_JAVA_SPACE = r"\x00-\x08\x0E-\x1F\x21-\x{10FFFF}"
HORIZONTAL_SPACE = r" \t\xA0\x{1680}\x{180E}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}"
VERTICAL_SPACE = r"\n\x0B\f\r\x{85}\x{2028}\x{2029}"
POSIX_CLASSES = {  # Java's US-ASCII \p{...} classes
    "Lower": "a-z", "Upper": "A-Z", "ASCII": r"\x00-\x7F", "Alpha": "a-zA-Z", "Digit": "0-9",
    "Alnum": "a-zA-Z0-9", "Punct": r"!-/:-@\[-`{-~", "Graph": "!-~", "Print": " -~", "Blank": r" \t",
    "Cntrl": r"\x00-\x1F\x7F", "XDigit": "0-9a-fA-F", "Space": r" \t\n\x0B\f\r",
}
BINARY_PROPERTIES = {"Alphabetic", "Ideographic", "Letter", "Lowercase", "Uppercase", "Titlecase", "Punctuation",
                     "Control", "White_Space", "WhiteSpace", "Digit", "Hex_Digit", "HexDigit", "Join_Control",
                     "JoinControl", "Noncharacter_Code_Point", "NoncharacterCodePoint", "Assigned", "Emoji"}
RE2_ESCAPABLE = set("\\.+*?()|[]{}^$-#&~!\"%',/:;<=>@`")
SIMPLE_ESCAPES = {"t": r"\t", "n": r"\n", "r": r"\r", "f": r"\f", "a": r"\a", "e": r"\x{1B}",
                  "d": r"\d", "D": r"\D", "w": r"\w", "W": r"\W"}
MAX_REPEAT = 1000  # RE2's limit on {n,m}


class JavaRegexError(ValueError):
    """The pattern cannot run as Java would run it; ``str()`` says why."""


class JavaSyntaxError(JavaRegexError):
    """Java itself refuses the pattern (Spark raises a PatternSyntaxException)."""


class JavaOnlyFeature(JavaRegexError):
    """Java accepts the pattern, but it uses something RE2 (DuckDB's regex engine) cannot do."""


@dataclass(frozen=True)
class JavaRegex:
    re2: str  # the pattern for DuckDB
    groups: int  # capturing groups, as Java's Matcher.groupCount()
    names: dict[str, int] = field(default_factory=dict)  # named groups → their number
    nullable: bool = False  # the pattern can match the empty string


def translate(pattern: str) -> JavaRegex:
    """The RE2 spelling of the Java regex ``pattern``."""
    return _Parser(pattern).parse()


def replacement(text: str, regex: JavaRegex) -> str:
    """A ``Matcher.appendReplacement`` replacement (``$1``, ``${name}``, ``\\$``) as an RE2 rewrite
    string (``\\1``, literal backslashes doubled). RE2 rewrites know groups 0 to 9 only."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 == len(text):
                raise JavaSyntaxError("character to be escaped is missing")
            out.append(_rewrite_literal(text[i + 1]))
            i += 2
        elif c == "$":
            group, i = _group_reference(text, i + 1, regex)
            if group > 9:
                raise JavaOnlyFeature(f"the replacement refers to group {group}; DuckDB's RE2 rewrites know groups 0 to 9")
            out.append("\\" + str(group))
        else:
            out.append(_rewrite_literal(c))
            i += 1
    return "".join(out)


def _rewrite_literal(c: str) -> str:
    return "\\\\" if c == "\\" else c


def _group_reference(text: str, i: int, regex: JavaRegex) -> tuple[int, int]:
    """Java's rule: ``${name}``, or the first digit, then more digits while the number stays a group."""
    if i < len(text) and text[i] == "{":
        end = text.find("}", i)
        name = text[i + 1:end] if end > 0 else ""
        if not name or name not in regex.names:
            raise JavaSyntaxError(f"No group with name {{{name}}}")
        return regex.names[name], end + 1
    if i >= len(text) or not text[i].isdigit():
        raise JavaSyntaxError("Illegal group reference")
    group, i = int(text[i]), i + 1
    while i < len(text) and text[i].isdigit() and group * 10 + int(text[i]) <= regex.groups:
        group, i = group * 10 + int(text[i]), i + 1
    if group > regex.groups:
        raise JavaSyntaxError(f"No group {group}")
    return group, i


@dataclass
class _Flags:
    dotall: bool = False
    unix_lines: bool = False
    comments: bool = False

    def copy(self) -> _Flags:
        return _Flags(self.dotall, self.unix_lines, self.comments)


class _Parser:
    def __init__(self, pattern: str):
        self.p = pattern
        self.i = 0
        self.groups = 0
        self.names: dict[str, int] = {}

    def parse(self) -> JavaRegex:
        out, nullable = self.alternation(_Flags())
        if self.i < len(self.p):  # only a ')' stops the top-level alternation early
            raise JavaSyntaxError(f"Unmatched closing ')' near index {self.i}")
        return JavaRegex(out, self.groups, dict(self.names), nullable)

    # -- structure ------------------------------------------------------------------------------

    def alternation(self, flags: _Flags) -> tuple[str, bool]:
        """Branches separated by ``|`` up to a ``)`` or the end; inline flags last to the group's end."""
        outs, nullable = [], False
        while True:
            out, branch_nullable = self.sequence(flags)
            outs.append(out)
            nullable = nullable or branch_nullable
            if self.peek() == "|":
                self.i += 1
                continue
            return "|".join(outs), nullable

    def sequence(self, flags: _Flags) -> tuple[str, bool]:
        out: list[str] = []
        nullable = True
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            if self.skip_comment(flags):
                continue
            atom, atom_nullable = self.atom(flags)
            if atom is None:
                continue
            quantifier, may_repeat_zero = self.quantifier(flags)
            out.append(atom + quantifier)
            nullable = nullable and (atom_nullable or may_repeat_zero)
        return "".join(out), nullable

    def skip_comment(self, flags: _Flags) -> bool:
        """``(?x)``: whitespace and ``#`` comments mean nothing."""
        if not flags.comments:
            return False
        c = self.p[self.i]
        if c in " \t\n\x0b\f\r":
            self.i += 1
            return True
        if c == "#":
            end = self.p.find("\n", self.i)
            self.i = len(self.p) if end < 0 else end + 1
            return True
        return False

    def atom(self, flags: _Flags) -> tuple[str | None, bool]:
        c = self.p[self.i]
        if c == "(":
            return self.group(flags)
        if c == "[":
            self.i += 1
            return self.char_class(flags), False
        if c == ".":
            self.i += 1
            if flags.dotall:
                return "(?s:.)", False
            return (r"[^\n]" if flags.unix_lines else f"[^{LINE_TERMINATORS}]"), False
        if c in "^$":
            self.i += 1
            return c, True
        if c == "\\":
            return self.escape(in_class=False)
        if c in "*+?":
            raise JavaSyntaxError(f"Dangling meta character '{c}' near index {self.i}")
        if c == "{":
            raise JavaSyntaxError(f"Illegal repetition near index {self.i}")
        self.i += 1
        return ("\\" + c if c in "]}" else c), False

    def group(self, flags: _Flags) -> tuple[str | None, bool]:
        start = self.i
        self.i += 1
        prefix, inner_flags, capturing = "(", flags.copy(), True
        if self.peek() == "?":
            self.i += 1
            kind = self.peek()
            if kind == ":":
                self.i += 1
                prefix, capturing = "(?:", False
            elif kind in "=!" or self.p.startswith(("<=", "<!"), self.i):
                raise JavaOnlyFeature("lookahead/lookbehind ((?=...), (?!...), (?<=...), (?<!...))")
            elif kind == ">":
                raise JavaOnlyFeature("an atomic group ((?>...))")
            elif kind == "<":
                end = self.p.find(">", self.i)
                name = self.p[self.i + 1:end] if end > 0 else ""
                if not name or not name[0].isascii() or not name[0].isalpha() or not name.isalnum():
                    raise JavaSyntaxError(f"named capturing group is missing trailing '>' or has a bad name near index {start}")
                if name in self.names:
                    raise JavaSyntaxError(f"Named capturing group <{name}> is already defined")
                self.i = end + 1
                prefix = f"(?P<{name}>"
                self.names[name] = self.groups + 1
            else:
                on, off = self.flag_letters()
                scoped = self.peek() == ":"
                if self.peek() not in (":", ")"):
                    raise JavaSyntaxError(f"Unknown inline modifier near index {self.i}")
                self.i += 1
                target = inner_flags if scoped else flags
                written = self.apply_flags(target, on, off)
                if not scoped:
                    return written or None, True
                prefix, capturing = f"(?{written[2:-1]}:" if written else "(?:", False
        if capturing:
            self.groups += 1
        inner, nullable = self.alternation(inner_flags)
        if self.peek() != ")":
            raise JavaSyntaxError(f"Unclosed group near index {len(self.p)}")
        self.i += 1
        return prefix + inner + ")", nullable

    def flag_letters(self) -> tuple[str, str]:
        on, off, negate = "", "", False
        while self.peek() is not None and (self.peek().isalpha() or self.peek() == "-"):
            c = self.p[self.i]
            self.i += 1
            if c == "-":
                negate = True
            elif c not in "idmsuxUc":
                raise JavaSyntaxError(f"Unknown inline modifier near index {self.i - 1}")
            elif negate:
                off += c
            else:
                on += c
        return on, off

    @staticmethod
    def apply_flags(flags: _Flags, on: str, off: str) -> str:
        """Track the flags this translation handles itself; write the ones RE2 shares (i, m, s)."""
        if "U" in on:
            raise JavaOnlyFeature("(?U) (Unicode character classes)")
        for letters, value in ((on, True), (off, False)):
            flags.dotall = value if "s" in letters else flags.dotall
            flags.unix_lines = value if "d" in letters else flags.unix_lines
            flags.comments = value if "x" in letters else flags.comments
        shared_on = "".join(c for c in on if c in "ims")
        shared_off = "".join(c for c in off if c in "ims")
        if not shared_on and not shared_off:
            return ""
        return f"(?{shared_on}{'-' + shared_off if shared_off else ''})"

    def quantifier(self, flags: _Flags) -> tuple[str, bool]:
        while flags.comments and self.i < len(self.p) and self.skip_comment(flags):
            pass
        c = self.peek()
        if c in ("*", "+", "?"):
            self.i += 1
            text, zero = c, c != "+"
        elif c == "{":
            text, zero = self.repetition()
        else:
            return "", False
        mode = self.peek()
        if mode == "+":
            raise JavaOnlyFeature(f"a possessive quantifier ({text}+)")
        if mode == "?":
            self.i += 1
            text += "?"
        if self.peek() in ("*", "+", "?", "{"):
            raise JavaSyntaxError(f"Dangling meta character '{self.peek()}' near index {self.i}")
        return text, zero

    def repetition(self) -> tuple[str, bool]:
        end = self.p.find("}", self.i)
        body = self.p[self.i + 1:end] if end > 0 else ""
        low, _, high = body.partition(",")
        if not low.isdigit() or (high and not high.isdigit()) or (high and int(high) < int(low)):
            raise JavaSyntaxError(f"Illegal repetition range near index {self.i}")
        if int(low) > MAX_REPEAT or (high and int(high) > MAX_REPEAT):
            raise JavaOnlyFeature(f"a repetition over {MAX_REPEAT} ({{{body}}}); DuckDB's RE2 allows at most {MAX_REPEAT}")
        self.i = end + 1
        return "{" + body + "}", int(low) == 0

    # -- character classes ----------------------------------------------------------------------

    def char_class(self, flags: _Flags) -> str:
        out = ["["]
        if self.peek() == "^":
            out.append("^")
            self.i += 1
        first = True
        while True:
            c = self.peek()
            if c is None:
                raise JavaSyntaxError("Unclosed character class")
            if flags.comments and self.skip_comment(flags):
                continue
            if c == "]" and not first:
                self.i += 1
                return "".join(out) + "]"
            if c == "[":
                raise JavaOnlyFeature("a nested character class ([a[b]], a union of classes)")
            if c == "&" and self.p.startswith("&&", self.i):
                raise JavaOnlyFeature("a character class intersection (&&)")
            if c == "\\":
                text, _ = self.escape(in_class=True)
                out.append(text)
            else:
                self.i += 1
                out.append("\\" + c if c in "]^\\" and not (c == "^" and not first) else c)
            first = False

    # -- escapes --------------------------------------------------------------------------------

    def escape(self, in_class: bool) -> tuple[str, bool]:
        """A ``\\x`` construct: (its RE2 spelling, whether it matches the empty string)."""
        self.i += 1
        c = self.peek()
        if c is None:
            raise JavaSyntaxError("Unexpected internal error: a trailing backslash")
        self.i += 1
        if c in SIMPLE_ESCAPES:
            return SIMPLE_ESCAPES[c], False
        if c in "123456789":
            raise JavaOnlyFeature(f"a backreference (\\{c})")
        if c == "k":
            raise JavaOnlyFeature("a named backreference (\\k<name>)")
        if c in "GZ":
            raise JavaOnlyFeature(f"\\{c} ({'end of the previous match' if c == 'G' else 'end of input but for a final terminator'})")
        if c in "XN":
            raise JavaOnlyFeature(f"\\{c}")
        if c in "bBAz":
            if in_class:
                raise JavaSyntaxError(f"Illegal/unsupported escape sequence \\{c} in a character class")
            return "\\" + c, True
        if c == "s":
            return (JAVA_SPACE if in_class else f"[{JAVA_SPACE}]"), False
        if c == "S":
            return (NOT_JAVA_SPACE if in_class else f"[^{JAVA_SPACE}]"), False
        if c in "hv":
            chars = HORIZONTAL_SPACE if c == "h" else VERTICAL_SPACE
            return (chars if in_class else f"[{chars}]"), False
        if c in "HV":
            if in_class:
                raise JavaOnlyFeature(f"\\{c} inside a character class")
            return f"[^{HORIZONTAL_SPACE if c == 'H' else VERTICAL_SPACE}]", False
        if c == "R":
            if in_class:
                raise JavaSyntaxError("Illegal/unsupported escape sequence \\R in a character class")
            return rf"(?:\r\n|[{VERTICAL_SPACE}])", False
        if c == "Q":
            end = self.p.find("\\E", self.i)
            quoted = self.p[self.i:] if end < 0 else self.p[self.i:end]
            self.i = len(self.p) if end < 0 else end + 2
            return "".join(_literal(q) for q in quoted), not quoted
        if c == "E":
            return "", True
        if c in "pP":
            return self.property(c == "P", in_class), False
        if c == "0":
            return self.octal(), False
        if c == "x":
            return self.hex_escape(), False
        if c == "u":
            return self.unicode_escape(), False
        if c == "c":
            control = self.peek()
            if control is None:
                raise JavaSyntaxError("Illegal control escape sequence")
            self.i += 1
            return f"\\x{{{ord(control) ^ 64:X}}}", False
        if c.isascii() and c.isalpha():
            raise JavaSyntaxError(f"Illegal/unsupported escape sequence \\{c}")
        return _literal(c), False

    def property(self, negated: bool, in_class: bool) -> str:
        if self.peek() == "{":
            end = self.p.find("}", self.i)
            if end < 0:
                raise JavaSyntaxError("Unclosed character family")
            name = self.p[self.i + 1:end]
            self.i = end + 1
        elif self.peek() is not None:
            name = self.p[self.i]
            self.i += 1
        else:
            raise JavaSyntaxError("Illegal character family")
        letter = "P" if negated else "p"
        posix = POSIX_CLASSES.get(name[2:] if name.startswith("Is") and name[2:] in POSIX_CLASSES else name)
        if posix is not None:
            if not negated:
                return posix if in_class else f"[{posix}]"
            if in_class:
                raise JavaOnlyFeature(f"\\P{{{name}}} inside a character class")
            return f"[^{posix}]"
        for prefix in ("script=", "sc=", "general_category=", "gc="):
            if name.startswith(prefix):
                name = name[len(prefix):]
        if name.startswith(("In", "block=", "blk=", "java")):
            raise JavaOnlyFeature(f"the character property \\{letter}{{{name}}}")
        if name.startswith("Is"):
            name = name[2:]
        if name in BINARY_PROPERTIES:
            raise JavaOnlyFeature(f"the character property \\{letter}{{Is{name}}}")
        return f"\\{letter}{{{name}}}"

    def octal(self) -> str:
        digits = ""
        while len(digits) < 3 and self.peek() is not None and self.peek() in "01234567":
            if len(digits) == 2 and digits[0] > "3":
                break
            digits += self.p[self.i]
            self.i += 1
        if not digits:
            raise JavaSyntaxError("Illegal octal escape sequence")
        return f"\\x{{{int(digits, 8):X}}}"

    def hex_escape(self) -> str:
        if self.peek() == "{":
            end = self.p.find("}", self.i)
            digits = self.p[self.i + 1:end] if end > 0 else ""
            self.i = end + 1 if end > 0 else self.i
        else:
            digits = self.p[self.i:self.i + 2]
            self.i += 2
        if not digits or len(digits) > 8 or any(d not in "0123456789abcdefABCDEF" for d in digits):
            raise JavaSyntaxError("Illegal hexadecimal escape sequence")
        return f"\\x{{{int(digits, 16):X}}}"

    def unicode_escape(self) -> str:
        code = self.four_hex()
        if 0xD800 <= code <= 0xDBFF and self.p.startswith("\\u", self.i):
            saved = self.i
            self.i += 2
            low = self.four_hex()
            if 0xDC00 <= low <= 0xDFFF:
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            else:
                self.i = saved
        return f"\\x{{{code:X}}}"

    def four_hex(self) -> int:
        digits = self.p[self.i:self.i + 4]
        if len(digits) != 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
            raise JavaSyntaxError("Illegal Unicode escape sequence")
        self.i += 4
        return int(digits, 16)

    def peek(self) -> str | None:
        return self.p[self.i] if self.i < len(self.p) else None


def _literal(c: str) -> str:
    """One character matched literally, in or out of a class."""
    if c in RE2_ESCAPABLE:
        return "\\" + c
    if c.isascii() and not c.isprintable():
        return f"\\x{{{ord(c):X}}}"
    return c
