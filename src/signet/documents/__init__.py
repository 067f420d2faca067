"""Documents: what the user already wrote (web pages, PDFs, markdown, notes) as searchable memory.

The flow, one module each::

    DocumentService.add (service)    validate the source, store the row, queue a job
      -> DocumentWorker (worker)     lease ``document_ingest`` jobs from the durable queue
         -> fetch / paths            the bytes: a URL (SSRF-checked per hop) or a local file
         -> extract                  HTML -> markdown, PDF -> text, markdown / text as is
         -> chunking                 markdown by headings, other text in overlapping windows
         -> index                    one transaction: chunk memories, links, the document row

A document moves ``queued -> extracting -> chunking -> embedding -> indexing -> done`` (or
``failed``); docs/documents.md describes the API, the CLI and the settings.
"""
