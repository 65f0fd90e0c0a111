"""Chunking workbench: compare chunking strategies for RAG on span-labelled questions."""

from workbench import offline as _offline

_offline.configure()
