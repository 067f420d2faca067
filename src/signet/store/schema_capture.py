"""Migration 28: live transcript capture cursors, and a full-text index over transcript turns.

``capture_cursors`` holds, per followed session file, how far it has been read (a byte offset
that always ends on a line boundary) and what the file looked like there (device, inode and
a hash of its first bytes), so a restarted daemon resumes exactly where the last one stopped
and a truncated or replaced file is noticed instead of being read from the wrong place. The
cursor moves in the same transaction as the turns it covers: a crash either stored both or
neither, which is what makes each turn land exactly once.

``transcript_turns_fts`` indexes the turns (external content: the text is kept once, in
``transcript_turns``), so recall's ``expand`` and the excerpt reader find the turn a memory
came from without scanning whole transcripts.
"""

from __future__ import annotations

CAPTURE_SCHEMA = """
CREATE TABLE IF NOT EXISTS capture_cursors (
    path TEXT PRIMARY KEY,
    harness TEXT NOT NULL,
    session_key TEXT,
    offset INTEGER NOT NULL DEFAULT 0,
    device INTEGER,
    inode INTEGER,
    head_hash TEXT,
    turns INTEGER NOT NULL DEFAULT 0,
    skipped_lines INTEGER NOT NULL DEFAULT 0,
    extract_from INTEGER,
    grew_at TEXT,
    status TEXT NOT NULL DEFAULT 'following',
    error TEXT,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_capture_extract ON capture_cursors(grew_at) WHERE extract_from IS NOT NULL;

CREATE VIRTUAL TABLE IF NOT EXISTS transcript_turns_fts USING fts5(
    content, content='transcript_turns', content_rowid='rowid', tokenize='unicode61'
);
CREATE TRIGGER IF NOT EXISTS transcript_turns_ai AFTER INSERT ON transcript_turns BEGIN
    INSERT INTO transcript_turns_fts(rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER IF NOT EXISTS transcript_turns_ad AFTER DELETE ON transcript_turns BEGIN
    INSERT INTO transcript_turns_fts(transcript_turns_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
CREATE TRIGGER IF NOT EXISTS transcript_turns_au AFTER UPDATE OF content ON transcript_turns BEGIN
    INSERT INTO transcript_turns_fts(transcript_turns_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
    INSERT INTO transcript_turns_fts(rowid, content) VALUES (new.rowid, new.content);
END;
INSERT INTO transcript_turns_fts(transcript_turns_fts) VALUES ('rebuild');
"""
