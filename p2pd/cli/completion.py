"""``p2pd completion bash|zsh|fish``: a shell completion script generated from the argparse parser itself, so it
never drifts from the commands — command names, each command's options, the values an option or argument takes
(``--to codex``, ``inbox import``), and files where a path goes.

bash gets a completion function; zsh the same function through its ``bashcompinit`` layer; fish native
``complete`` lines with each command's and option's help as the description.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from dataclasses import dataclass, field
from typing import Any

SHELLS = ("bash", "zsh", "fish")


@dataclass
class Option:
    flags: list[str]
    takes_value: bool
    choices: list[str]
    help: str


@dataclass
class Command:
    """One level of the parser: its options, the values its positional arguments take, its subcommands."""

    help: str = ""
    options: list[Option] = field(default_factory=list)
    words: list[str] = field(default_factory=list)  # choices of its positional arguments
    commands: dict[str, Command] = field(default_factory=dict)


def register(sub: Any, root: argparse.ArgumentParser) -> None:
    s = sub.add_parser("completion", help="print a shell completion script (bash, zsh, fish)")
    s.add_argument("shell", choices=SHELLS)
    s.set_defaults(func=lambda args: cmd_completion(args, root))


def cmd_completion(args: argparse.Namespace, root: argparse.ArgumentParser) -> int:
    sys.stdout.write(script(args.shell, root))
    return 0


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    tree = command_tree(parser)
    name = parser.prog
    return {"bash": bash, "zsh": zsh, "fish": fish}[shell](name, tree)


def command_tree(parser: argparse.ArgumentParser, help: str = "") -> Command:
    command = Command(help=help)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                command.commands[name] = command_tree(sub, helps.get(name, ""))
        elif action.option_strings:
            command.options.append(Option(list(action.option_strings), action.nargs != 0,
                                          [str(c) for c in action.choices or []], _help(action)))
        elif action.choices:
            command.words += [str(c) for c in action.choices]
    return command


def _help(action: argparse.Action) -> str:
    text = (action.help or "") if action.help is not argparse.SUPPRESS else ""
    text = text.replace("%(default)s", str(action.default)).replace("%%", "%")
    return re.split(r"(?<=[;:(])\s|\s\(", text, maxsplit=1)[0].rstrip(" ;:(")


# ---------------------------------------------------------------- bash (and zsh)
def bash(name: str, tree: Command) -> str:
    func = "_" + re.sub(r"\W", "_", name)
    blocks = [_bash_block('""', tree, list(tree.commands))]
    blocks += [_bash_block(shlex.quote(cmd), sub, sub.words) for cmd, sub in tree.commands.items()]
    valued = " ".join(sorted({flag for command in (tree, *tree.commands.values()) for option in command.options
                              if option.takes_value for flag in option.flags}))
    return f"""# {name} completion for bash, generated from its parser: `{name} completion bash`
{func}() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" cmd="" i
  local rest=0 opts="" words=""
  local valued=" {valued} "
  for ((i = 1; i < COMP_CWORD; i++)); do
    [[ "$valued" == *" ${{COMP_WORDS[i-1]}} "* ]] && continue  # the value of an option
    case "${{COMP_WORDS[i]}}" in
      -*) ;;
      *) if [[ -z "$cmd" ]]; then cmd="${{COMP_WORDS[i]}}"; else rest=1; fi ;;
    esac
  done
  COMPREPLY=()
  case "$cmd" in
{chr(10).join(blocks)}
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ -n "$words" && $rest -eq 0 ]]; then
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
  fi
}}
complete -o default -F {func} {name}
"""


def _bash_block(pattern: str, command: Command, words: list[str]) -> str:
    lines = [f"    {pattern})", '      case "$prev" in']
    for option in command.options:
        if option.takes_value:
            values = f'COMPREPLY=($(compgen -W "{" ".join(option.choices)}" -- "$cur"))' if option.choices else ":"
            lines.append(f"        {'|'.join(option.flags)}) {values}; return 0 ;;")
    lines.append("      esac")
    flags = " ".join(flag for option in command.options for flag in option.flags)
    lines += [f'      opts="{flags}"', f'      words="{" ".join(words)}"', "      ;;"]
    return "\n".join(lines)


def zsh(name: str, tree: Command) -> str:
    return (f"#compdef {name}\n# {name} completion for zsh, generated from its parser: `{name} completion zsh` "
            "(bash's completion through zsh's bashcompinit)\nautoload -U +X bashcompinit && bashcompinit\n"
            + bash(name, tree).split("\n", 1)[1])


# ---------------------------------------------------------------- fish
def fish(name: str, tree: Command) -> str:
    lines = [f"# {name} completion for fish, generated from its parser: `{name} completion fish`"]
    top = "__fish_use_subcommand"
    for option in tree.options:
        lines.append(_fish_option(name, top, option))
    for cmd, sub in tree.commands.items():
        lines.append(f"complete -c {name} -n {top} -f -a {_fish_quote(cmd)} -d {_fish_quote(sub.help)}")
    for cmd, sub in tree.commands.items():
        seen = f"'__fish_seen_subcommand_from {cmd}'"
        for option in sub.options:
            lines.append(_fish_option(name, seen, option))
        if sub.words:
            lines.append(f"complete -c {name} -n {seen} -f -a {_fish_quote(' '.join(sub.words))}")
    return "\n".join(lines) + "\n"


def _fish_option(name: str, condition: str, option: Option) -> str:
    parts = [f"complete -c {name} -n {condition}"]
    for flag in option.flags:
        parts.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
    if option.choices:
        parts.append(f"-x -a {_fish_quote(' '.join(option.choices))}")
    elif option.takes_value:
        parts.append("-r")
    if option.help:
        parts.append(f"-d {_fish_quote(option.help)}")
    return " ".join(parts)


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

