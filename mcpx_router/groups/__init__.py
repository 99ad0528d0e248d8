"""Many peers, one capability: groups of equivalent tools and what serves their calls.

A group's spec and name (`_spec`), its members worked out after each catalogue change and its
published function (`_groups`), the order members are tried in (`_choosing`), a group call run
on a member with failover when it is safe (`_caller`), statistics and reputation per peer and
tool (`_reputation`), saved to a file (`_stats_file`), and the adapter's part that holds them
all (`_grouping`). It imports the core and `model/`; of the core, the catalogue, the answerer
and the adapter plug it in.
"""
