"""Table talk (chat and quick phrases among a table's people) and players' reports."""
