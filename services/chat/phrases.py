"""The quick phrases: a fixed set of stable ids with their Persian, Arabic and English texts.

A message carries the id only, so that every app shows the phrase in its own language (the
texts here are what ``ListPhrases`` returns and docs/clients.md "Table talk" lists). An id
never changes nor changes meaning once shipped; new phrases are added at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Phrase:
    """A quick phrase and its texts."""

    phrase_id: str
    fa: str
    ar: str
    en: str


PHRASES: Final = (
    Phrase("hello", "سلام", "السلام عليكم", "Hello"),
    Phrase("good_luck", "موفق باشید", "بالتوفيق", "Good luck"),
    Phrase("well_played", "آفرین", "أحسنت", "Well played"),
    Phrase("nice_hand", "دست خوبی بود", "يد موفقة", "Nice hand"),
    Phrase("thanks", "مرسی", "شكراً", "Thanks"),
    Phrase("sorry", "ببخشید", "آسف", "Sorry"),
    Phrase("hurry_up", "لطفاً سریع‌تر", "أسرع من فضلك", "Please hurry"),
    Phrase("oops", "ای وای", "أوه", "Oops"),
    Phrase("one_more", "یک دست دیگر؟", "جولة أخرى؟", "One more?"),
    Phrase("good_game", "بازی خوبی بود", "لعبة جميلة", "Good game"),
    Phrase("bye", "خداحافظ", "مع السلامة", "Bye"),
)
"""Every phrase, in the order an app may offer them."""

PHRASES_BY_ID: Final = {phrase.phrase_id: phrase for phrase in PHRASES}
