"""The task API: tasks, typed items, data loading, the registry and the request kinds backends answer."""
