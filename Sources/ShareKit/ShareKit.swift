// ShareKit: share extensions on Linux. See docs/sharekit.md.
