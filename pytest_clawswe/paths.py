"""Where the shipped data lives: the instance lists, the demo task repo, published results, prompts."""
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PACKAGE_DIR.parent
INSTANCES_DIR = PROJECT_ROOT / "instances"
DEMO_TASK_REPO = INSTANCES_DIR / "demo"
PUBLISHED_RESULTS = PROJECT_ROOT / "reports" / "published" / "claw_swe_bench_published_results.json"
PROMPTS_DIR = PACKAGE_DIR / "prompts"
HARNESS_RECIPES_DIR = PROJECT_ROOT / "harnesses"
