// Package setup builds what makes a host run interlink-mcp: the files of the
// Claude Code plugin (the MCP server, the hooks and the skill) and the
// sections of Codex's config.toml (the MCP server and the hooks that bind a
// session to its thread). Every command in them names the binary by the
// absolute path it is given, quoted for the shell that runs hook commands
// ([ShellQuote]).
package setup
