"""Alerts: SQL rules over the analytics views -> Prometheus-style state -> Slack, email, webhook,
Alertmanager. See docs/alerts.md.

    config        [alerts] config dataclasses (AlertsConfig, RuleConfig, ChannelConfig, ...)
    builtin       the built-in rule pack (queries in sql/alerts/*.sql)
    rules         Rule, rules_from_config
    evaluate      run a rule's SQL -> Instance (labels, value, annotations, fingerprint)
    state         inactive -> pending -> firing -> resolved (alert_state, alert_events)
    silences      create_silence / expire_silence / list_silences (alert_silences)
    inhibition    a firing higher severity mutes lower ones with equal labels
    grouping      routing to channels, one notification per group, repeat_interval
    outbox        notifications recorded before sending (alert_notifications)
    delivery      retries with backoff and Retry-After, every attempt recorded
    channels      slack, email, webhook, alertmanager; build_channels
    engine        Engine.run_once / Engine.evaluate; engine_from_config
    actions       check / send_test: what `gpuledger alerts ...` (gpuledger/cli/alerts.py) runs
    digest        each team's daily or weekly digest of past waste, through its contact channel
    scheduler     install(platform, cfg): the alerts and digest jobs inside `gpuledger up`
"""
