// Durable state for ferryd; see FerryStore.swift.
