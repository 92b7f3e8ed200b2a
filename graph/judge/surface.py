"""Surface forms of an answer: what the answer matcher (matching.py) compares, never a decision.

Why a layer of its own: "two" and "2", "U.S.A." and "United States", "6 January 1975" and "January 6,
1975" must compare equal before any rule of bench/judge/reference/LABELLING.md can be applied, and
each of those forms is one idea defined once. The tables (number words, months, countries and their
demonyms, generic words) are data in surface.toml. Built on the HotpotQA normalisation
(`metrics.normalize_answer`), folded further: accents, typographic punctuation, hyphens.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from typing import Any

from .metrics import normalize_answer

# typographic punctuation -> ASCII; hyphens, dashes and slashes separate words
_TYPOGRAPHY = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u2010": " ",
        "\u2011": " ",
        "\u2012": " ",
        "\u2013": " ",
        "\u2014": " ",
        "-": " ",
        "/": " ",
        "&": " and ",
    }
)
_NUMBER = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?:\s*(hundred|thousand|million|billion|trillion|bn|k|m)\b)?"
)
_YEAR = re.compile(r"(?<![\w.,])(\d{3,4})(?:s\b|(?!\w))")
_RANGE = re.compile(r"\b(\d{3,4})\s*(?:-|\u2013|\u2014|to|until|till)\s*(\d{2,4})\b")


@lru_cache(maxsize=1)
def tables() -> dict[str, Any]:
    """The parsed surface.toml shipped inside the package."""
    return tomllib.loads(files(__package__).joinpath("surface.toml").read_text(encoding="utf-8"))


def ascii_fold(text: str) -> str:
    """Accents dropped and typographic punctuation made ASCII ("Pitäjänmäki" -> "Pitajanmaki")."""
    decomposed = unicodedata.normalize("NFKD", text.translate(_TYPOGRAPHY))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def fold(text: str) -> str:
    """The HotpotQA normalisation of the ASCII-folded text (hyphenated words split)."""
    return normalize_answer(ascii_fold(text))


@lru_cache(maxsize=1)
def _word_numbers() -> dict[str, str]:
    nums = tables()["numbers"]
    words = {w: str(i) for i, w in enumerate(nums["cardinals"])}
    words.update({w: str(v) for w, v in nums["tens"].items()})
    for i, w in enumerate(nums["ordinals"]):
        words[fold(w).replace(" ", "")] = (
            f"{i}{'th' if 10 <= i % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(i % 10, 'th')}"
        )
    return words


@dataclass(frozen=True)
class Word:
    """One token of an answer with the raw chunk it came from (its capitals and punctuation)."""

    tok: str
    raw: str

    @property
    def capitalised(self) -> bool:
        """Starts with a capital letter or a digit: part of a name ("Harvard", "1961")."""
        core = self.raw.lstrip("\"'(\u201c[")
        return bool(core) and (core[0].isupper() or core[0].isdigit())

    @property
    def opens(self) -> bool:
        """Starts a parenthesis or a quotation."""
        return self.raw[:1] in '("['

    @property
    def closes(self) -> bool:
        """Ends with punctuation that separates it from the next word ("Eindhoven," "band)")."""
        return self.raw[-1:] in ',.;:!?)"]'


def words(text: str) -> list[Word]:
    """The answer's tokens (as `tokens`) with their raw chunks; chunks that fold to nothing are dropped."""
    nums = _word_numbers()
    out: list[Word] = []
    for chunk in ascii_fold(text).split():
        folded = normalize_answer(chunk)
        if folded:
            out.append(Word(nums.get(folded, folded), chunk))
    return out


def tokens(text: str) -> list[str]:
    """Folded tokens with number words as digits ("Two" -> "2", "eighteenth" -> "18th")."""
    return [w.tok for w in words(text)]


def generic_words() -> frozenset[str]:
    """Words that name a kind of thing (college, river, film), not which one."""
    return frozenset(tables()["words"]["generic"])


def function_words() -> frozenset[str]:
    """Articles, prepositions, auxiliaries and pronouns: neither a name nor a claim."""
    return frozenset(tables()["words"]["function"])


def content(toks: list[str]) -> list[str]:
    """The tokens that identify something: not generic, not function words."""
    skip = generic_words() | function_words()
    return [t for t in toks if t not in skip]


def find(needle: list[str], hay: list[str]) -> list[int]:
    """Start positions of `needle` as a contiguous run of `hay`."""
    n = len(needle)
    if not n:
        return []
    return [i for i in range(len(hay) - n + 1) if hay[i : i + n] == needle]


def in_order(needle: list[str], hay: list[str]) -> bool:
    """True when every token of `needle` appears in `hay`, in order (gaps allowed)."""
    it = iter(hay)
    return all(any(t == h for h in it) for t in needle)


def initials(text: str) -> set[str]:
    """Acronyms a multi-word name may be written as: "John F. Kennedy" -> {"jfk"}, "United States of
    America" -> {"usa", "usoa"}. Empty for a one-word name."""
    words = [w for w in re.split(r"[\s\-]+", ascii_fold(text)) if any(c.isalnum() for c in w)]
    if len(words) < 2:
        return set()
    letters = [next(c for c in w if c.isalnum()).lower() for w in words]
    small = {"of", "the", "and", "for", "de", "a", "an"}
    return {"".join(letters), "".join(c for c, w in zip(letters, words) if w.lower() not in small)} - {""}


def acronym(text: str) -> str | None:
    """The acronym an answer is written as, when it is one: "JFK", "U.S.A." -> "usa"; else None."""
    bare = ascii_fold(text).strip(" .\"'")
    letters = bare.replace(".", "").replace(" ", "")
    if (
        2 <= len(letters) <= 6
        and letters.isalpha()
        and (letters.isupper() or re.fullmatch(r"(\w\.\s?){2,6}", bare + "."))
    ):
        return letters.lower()
    return None


# ---- numbers (rule 3) ----


def numbers_in(text: str) -> list[float]:
    """Every number an answer states, with its scale: "1.5 million" -> 1500000.0, "1,500,000" ->
    1500000.0, "two" -> 2.0."""
    scales = tables()["numbers"]["scales"]
    low = ascii_fold(text).lower()
    values = [float(m.group(1).replace(",", "")) * scales.get(m.group(2) or "", 1.0) for m in _NUMBER.finditer(low)]
    words = _word_numbers()
    toks = fold(low).split()
    for i, t in enumerate(toks):
        if t in words and words[t].isdigit():
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            values.append(float(words[t]) * scales.get(nxt, 1.0))
    return values


def as_number(text: str) -> float | None:
    """The gold's value when the gold is a bare number (one, with an optional scale word), else None."""
    vals = numbers_in(text)
    rest = [t for t in tokens(text) if not re.fullmatch(r"[\d.]+", t) and t not in tables()["numbers"]["scales"]]
    return vals[0] if len(vals) == 1 and not rest else None


# ---- dates (rule 4) ----


@dataclass(frozen=True)
class Date:
    """A date as precise as it was written: a year, a month and year, or a full date."""

    year: int
    month: int | None = None
    day: int | None = None

    def within(self, other: Date) -> bool:
        """True when this date says everything `other` says ("6 January 1975" within "1975")."""
        return all(
            o is None or o == s for s, o in ((self.year, other.year), (self.month, other.month), (self.day, other.day))
        )


@lru_cache(maxsize=1)
def _date_patterns() -> list[tuple[re.Pattern[str], str]]:
    month = "|".join(sorted((m for names in tables()["dates"]["months"] for m in names), key=len, reverse=True))
    mon = rf"(?P<m>{month})\.?"
    day = r"(?P<d>\d{1,2})(?:st|nd|rd|th)?"
    year = r"(?P<y>\d{3,4})"
    return [
        (re.compile(rf"\b{day}\s+(?:of\s+)?{mon},?\s+{year}\b"), "dmy"),
        (re.compile(rf"\b{mon}\s+{day},?\s+{year}\b"), "mdy"),
        (re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"), "iso"),
        (re.compile(rf"\b{mon},?\s+{year}\b"), "my"),
    ]


def _month(name: str) -> int:
    if name.isdigit():
        return int(name)
    for i, names in enumerate(tables()["dates"]["months"], start=1):
        if name in names:
            return i
    raise ValueError(name)


def dates_in(text: str) -> list[Date]:
    """Every date the text states, each as precise as written; bare years count as years."""
    low = ascii_fold(text).lower()
    found: list[Date] = []
    taken = [False] * len(low)
    for pattern, _ in _date_patterns():
        for m in pattern.finditer(low):
            if any(taken[m.start() : m.end()]):
                continue
            d = m.groupdict().get("d")
            month = _month(m.group("m"))
            if not 1 <= month <= 12 or (d and not 1 <= int(d) <= 31):
                continue
            found.append(Date(int(m.group("y")), month, int(d) if d else None))
            taken[m.start() : m.end()] = [True] * (m.end() - m.start())
    for m in _YEAR.finditer(low):
        if not any(taken[m.start() : m.end()]) and 1000 <= int(m.group(1)) <= 2100 and not m.group(0).endswith("s"):
            found.append(Date(int(m.group(1))))
    return found


def decades_in(text: str) -> bool:
    """True when the text names a decade ("the 1840s"): less specific than a year (rule 11)."""
    return bool(re.search(r"\b\d{3}0s\b", ascii_fold(text)))


def year_ranges(text: str) -> list[tuple[int, int]]:
    """Year spans the text states ("1961-1964", "1908 to 1980")."""
    spans = []
    for m in _RANGE.finditer(text.lower()):
        a, b = m.group(1), m.group(2)
        end = int(a[: len(a) - len(b)] + b) if len(b) < len(a) else int(b)
        spans.append((int(a), end))
    return spans


def as_date(text: str) -> Date | None:
    """The gold's date when the gold is only a date ("2 May 1934", "1961", "November 2017")."""
    found = dates_in(text)
    if len(found) != 1:
        return None
    low = ascii_fold(text).lower()
    rest = low
    for pattern, _ in _date_patterns():
        rest = pattern.sub(" ", rest)
    rest = _YEAR.sub(" ", rest)
    return found[0] if not [t for t in fold(rest).split() if t not in {"on", "in", "of"}] else None


# ---- countries (rule 5) ----


@lru_cache(maxsize=1)
def _country_index() -> dict[tuple[str, ...], str]:
    index: dict[tuple[str, ...], str] = {}
    for key, entry in tables()["countries"].items():
        for form in [*entry["names"], *entry["demonyms"]]:
            index[tuple(fold(form).split())] = key
    return index


def country_of(text: str) -> str | None:
    """The country a whole text names, by a name or demonym ("American" -> "united_states")."""
    return _country_index().get(tuple(fold(text).split()))


def countries_in(toks: list[str]) -> set[str]:
    """Every country a token list mentions by name or demonym (longest forms first)."""
    index = _country_index()
    longest = max(len(k) for k in index)
    found: set[str] = set()
    i = 0
    while i < len(toks):
        for n in range(min(longest, len(toks) - i), 0, -1):
            key = index.get(tuple(toks[i : i + n]))
            if key:
                found.add(key)
                i += n
                break
        else:
            i += 1
    return found


__all__ = [
    "tables",
    "ascii_fold",
    "fold",
    "Word",
    "words",
    "tokens",
    "generic_words",
    "function_words",
    "content",
    "find",
    "in_order",
    "initials",
    "acronym",
    "numbers_in",
    "as_number",
    "Date",
    "dates_in",
    "decades_in",
    "year_ranges",
    "as_date",
    "country_of",
    "countries_in",
]
