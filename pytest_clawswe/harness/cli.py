"""`clawswe harness build|lock|list`: build a harness's bundle, write its lock file, list recipes and built versions."""
from __future__ import annotations

from pytest_clawswe.engine.images.build import _docker
from pytest_clawswe.errors import BundleBuildError, UserError
from pytest_clawswe.harness.bundles import build_bundle, built_versions, write_lock
from pytest_clawswe.harness.recipes import load_recipes


def add_cli(subparsers) -> None:
    harness = subparsers.add_parser("harness", help="build and list harness bundles")
    sub = harness.add_subparsers(dest="harness_command", required=True)
    build = sub.add_parser("build", help="build a harness bundle (reused by every run)")
    build.add_argument("name", help="harness name, e.g. openclaw")
    build.add_argument("--version", help="harness version (default: the recipe's)")
    build.add_argument("--force", action="store_true", help="rebuild even if the bundle exists")
    build.add_argument("--binary", help="the executable, for harnesses on no registry (zeroclaw)")
    build.set_defaults(func=_cli_build)
    lock = sub.add_parser("lock", help="resolve a harness's packages and write its lock file beside the recipe")
    lock.add_argument("name", help="harness name, e.g. openclaw")
    lock.set_defaults(func=_cli_lock)
    listing = sub.add_parser("list", help="list harness recipes and built bundles")
    listing.set_defaults(func=_cli_list)


def _cli_build(args) -> int:
    try:
        tag = build_bundle(args.name, args.version, force=args.force, binary=args.binary)
    except BundleBuildError as exc:
        raise UserError(str(exc).splitlines()[0] + " (log above)") from None
    print(tag)
    return 0


def _cli_lock(args) -> int:
    print(write_lock(args.name))
    return 0


def _cli_list(args) -> int:
    from pytest_clawswe.harness.adapter import options_lines

    try:
        client = _docker()
    except UserError:
        client = None  # recipes can be listed without Docker
    for recipe in load_recipes().values():
        built = ", ".join(built_versions(client, recipe.name)) if client else "?"
        print(f"{recipe.name:16} {recipe.runtime:7} {recipe.package}@{recipe.version or '(--binary)'}  built: {built or '-'}")
        print("\n".join(options_lines(recipe.name)) or "    (no options)")
    return 0
