"""Embedding providers (one interface) and the background service that fills vectors in.

Nothing phones home: ONNX Runtime's official builds (1.29+) send usage telemetry to Microsoft
and keep a device id under ``~/.cache/Microsoft/DeveloperTools`` unless ``ORT_DISABLE_TELEMETRY``
is set before the runtime initialises, so it is set here, before any module of this package
can import onnxruntime (a user's own explicit setting is kept). The local embedder also calls
``onnxruntime.disable_telemetry_events()`` for the event API of older builds.
"""

import os

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
