"""The presentation floor: every surface renders an engine Answer from here.

labels (shared words, units and summaries) · terminal (the CLI's text) · slack (Block Kit
template data for the bot) · blockkit (templates/ rendered with Slack's escaping) · charts (PNG).
The engine returns data; nothing here computes a number the engine did not.
"""
