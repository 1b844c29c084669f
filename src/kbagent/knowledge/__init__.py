"""Knowledge bases: datasets, documents, paragraphs; parsing, chunking, embeddings, keyword/vector/hybrid search."""
