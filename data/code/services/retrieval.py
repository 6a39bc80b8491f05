"""Retrieval service: turns a question into trimmed context for the LLM.

The service embeds the question (optionally with a HyDE passage), searches the tenant's chunks,
and trims each chunk to the sentences that matter.
"""
import logging
import os
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

DEFAULT_TOP_K = 5
TRIM_THRESHOLD = float(os.environ.get("RETRIEVAL_TRIM_THRESHOLD", "0.38"))


@dataclass
class SearchRequest:
    """A search as the API receives it."""

    tenant_id: str
    query: str
    top_k: int = DEFAULT_TOP_K
    filters: dict = field(default_factory=dict)
    trim: bool = False

    def validate(self):
        if not self.query.strip():
            raise ValueError("query must not be empty")
        if not 1 <= self.top_k <= 50:
            raise ValueError("top_k must be between 1 and 50")


class RetrievalService:
    """Searches one region's index; every search is scoped to exactly one tenant."""

    def __init__(self, store, embedder, trimmer=None):
        self.store = store
        self.embedder = embedder
        self.trimmer = trimmer

    def search(self, req: SearchRequest):
        req.validate()
        filters = {**req.filters, "tenant": req.tenant_id}
        vec = self.embedder.embed_query(req.query)
        chunks = self.store.search(vec, k=req.top_k, filters=filters)
        if req.trim and self.trimmer is not None:
            chunks = self.trimmer(vec, chunks, threshold=TRIM_THRESHOLD)
        log.info("search tenant=%s k=%d hits=%d", req.tenant_id, req.top_k, len(chunks))
        return chunks


def estimate_tokens(text: str) -> int:
    """Rough token count for budgeting: words times 1.3."""
    return round(len(text.split()) * 1.3)
