"""Real-world-shaped config files of each host, with the comments, trailing commas and layouts people write, each
holding a command server and a URL server (one with a custom timeout where the host has one)."""

from __future__ import annotations

CLAUDE_USER = """{
  "numStartups": 12,
  "theme": "dark",
  "mcpServers": {
    "files": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/data"],
      "env": {},
      "timeout": 900000
    },
    "docs": {
      "type": "http",
      "url": "http://127.0.0.1:8931/mcp",
      "headers": {
        "Authorization": "Bearer ${DOCS_TOKEN}"
      }
    }
  },
  "projects": {
    "/home/me/app": {
      "allowedTools": [],
      "mcpServers": {
        "local-db": {
          "command": "uvx",
          "args": [
            "mcp-server-sqlite",
            "--db-path",
            "app.db"
          ]
        }
      }
    }
  }
}
"""

PROJECT_MCP = """{
  "mcpServers": {
    "council": {"command": "mcpwatch", "args": ["council"], "timeout": 300000},
    "search": {"type": "http", "url": "http://127.0.0.1:9000/mcp"}
  }
}
"""

CLAUDE_DESKTOP = """{
  // servers for Claude Desktop; restart it after editing
  "mcpServers": {
    "council": {
      "command": "mcpwatch",
      "args": ["council", "--backend", "openai"], // the reference server
      "env": {"OPENROUTER_API_KEY": "sk-or-xxx"}
    },
    /* a remote one, through a local bridge */
    "weather": {
      "url": "https://weather.example.com/mcp",
      "headers": {"X-Api-Key": "abc"},
    },
  },
  "globalShortcut": "Ctrl+Space"
}
"""

CODEX = """# Codex CLI configuration
model = "o4-mini"

[mcp_servers.docs]
command = "npx"   # the docs server
args = ["-y", "mcp-docs", "--root", "/srv/docs"]
tool_timeout_sec = 300.0
startup_timeout_sec = 20

[mcp_servers.docs.env]
DOCS_LOG = "warn"

# a remote server over Streamable HTTP
[mcp_servers.figma]
url = "http://127.0.0.1:3845/mcp"
http_headers = { "X-Team" = "design" }
enabled = true

[profiles.fast]
model = "o4-mini"
"""

GEMINI = """{
  "theme": "GitHub",
  "mcpServers": {
    "pythonTools": {
      "command": "python",
      "args": ["-m", "my_mcp_server", "--port", "8080"],
      "cwd": "./mcp-servers/python",
      "env": {"DATABASE_URL": "$DB_CONNECTION_STRING"},
      "timeout": 15000,
      "trust": false
    },
    "httpServer": {
      "httpUrl": "http://127.0.0.1:8123/mcp",
      "headers": {"Authorization": "Bearer abc"},
      "timeout": 5000
    }
  }
}
"""

VSCODE = """// VS Code: MCP servers of this workspace
{
  "inputs": [
    {
      "type": "promptString",
      "id": "perplexity-key",
      "description": "Perplexity API Key",
      "password": true
    }
  ],
  "servers": {
    // a local server over stdio
    "Perplexity": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "server-perplexity-ask"],
      "env": {
        "PERPLEXITY_API_KEY": "${input:perplexity-key}"
      }
    },
    "github": {
      "type": "http",
      "url": "https://api.githubcopilot.com/mcp/"
    }
  }
}
"""

CURSOR = """{
  "mcpServers": {
    "linear": {
      "command": "npx",
      "args": ["-y", "mcp-remote", "https://mcp.linear.app/sse"]
    },
    "context7": {
      "url": "https://mcp.context7.com/mcp",
      "headers": {
        "CONTEXT7_API_KEY": "YOUR_API_KEY"
      }
    }
  }
}
"""

WINDSURF = """{
    "mcpServers": {
        "brave-search": {
            "command": "npx",
            "args": [
                "-y",
                "@modelcontextprotocol/server-brave-search"
            ],
            "env": {
                "BRAVE_API_KEY": "<YOUR_API_KEY>"
            }
        },
        "remote": {
            "serverUrl": "https://example.com/mcp",
            "headers": {"API_KEY": "value"}
        }
    }
}
"""

# path under the home directory (or, for project files, under the project) → text
HOME_FILES = {
    ".claude.json": CLAUDE_USER,
    ".config/Claude/claude_desktop_config.json": CLAUDE_DESKTOP,
    ".codex/config.toml": CODEX,
    ".gemini/settings.json": GEMINI,
    ".cursor/mcp.json": CURSOR,
    ".codeium/windsurf/mcp_config.json": WINDSURF,
}
PROJECT_FILES = {
    ".mcp.json": PROJECT_MCP,
    ".vscode/mcp.json": VSCODE,
}
