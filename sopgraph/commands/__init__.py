"""The CLI's command groups, one module each; each registers its subcommands on the one parser
that ``sopgraph.cli.build_parser`` makes, and imports the engine only when its command runs."""
