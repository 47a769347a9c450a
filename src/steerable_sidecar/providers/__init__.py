"""The model providers: the OpenAI-compatible chat-completions provider and its configuration.

The vendor profiles say what each endpoint needs on the wire (docs/providers.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steerable_agent_runtime.lazy import lazy_exports

if TYPE_CHECKING:
    from ._openai import (
        PROVIDER_NAMES,
        LLMConfig,
        OpenAICompatibleProvider,
        ProviderName,
        default_llm_provider,
    )
    from ._vendor_profiles import VENDOR_PROFILES, VendorProfile, choose_profile

_EXPORTS: dict[str, tuple[str, ...]] = {
    "_openai": (
        "PROVIDER_NAMES",
        "LLMConfig",
        "OpenAICompatibleProvider",
        "ProviderName",
        "default_llm_provider",
    ),
    "_vendor_profiles": ("VENDOR_PROFILES", "VendorProfile", "choose_profile"),
}
"""Each module and the public names it provides (the block above, for type checkers)."""

__all__ = [
    "PROVIDER_NAMES",
    "VENDOR_PROFILES",
    "LLMConfig",
    "OpenAICompatibleProvider",
    "ProviderName",
    "VendorProfile",
    "choose_profile",
    "default_llm_provider",
]

if not TYPE_CHECKING:  # hidden from type checkers, so a misspelt import still fails there
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
