"""Placeholder answers: sentences that state nothing a passage could support.

Beside the collection's data rather than in the support family, so that the sentences' model derives its
`placeholder` flag from the same rule when a sentence is written (annotation/models/collection.py) and
the support pages count units by that flag.
"""

from __future__ import annotations

import re

# Stand-ins that runs hold where they have no answer, e.g. every response of the iKAT 2024 sample run is
# "<placeholder text for response 1>". Matched against the whole sentence, so a real sentence that merely
# mentions a placeholder is not one: a bracketed phrase naming "placeholder" or a template slot ({...}),
# "lorem ipsum" filler, a bare stand-in word (placeholder, TODO, TBD, N/A, null, dummy text), or only
# punctuation ("...", "-").
_PLACEHOLDER = re.compile(
    r"""^(?:
        <[^<>]*\bplaceholder\b[^<>]*>
      | \[[^\[\]]*\bplaceholder\b[^\[\]]*\]
      | \(\s*placeholder\b[^()]*\)
      | \{\{?[^{}]*\}\}?
      | lorem\ ipsum\b.*
      | (?:placeholder(?:\ text)?|todo|tbd|n/a|null|dummy(?:\ text)?)[.!]?
      | [\W_]+
    )$""",
    re.IGNORECASE | re.DOTALL | re.VERBOSE,
)


def is_placeholder(text: str) -> bool:
    """Whether an answer sentence is empty, whitespace, or a known stand-in rather than an answer.

    Such a sentence states nothing a passage could support, so it is never a support unit: no assessor
    is asked to judge it and no label is taken for it.
    """
    stripped = text.strip()
    return not stripped or _PLACEHOLDER.match(stripped) is not None
