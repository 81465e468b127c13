// The IPC protocol between Ferry and ferryd; see docs/protocol.md.
