"""The offline text model on numpy: MiniLM (WordPiece, the ONNX reader, embed), the cache of
its vectors by text hash, and lexical scoring (content words, BM25)."""
