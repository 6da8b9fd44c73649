"""One-off measurements that a page cites and that stay meaningful to rerun."""
