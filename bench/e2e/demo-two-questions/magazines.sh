cd "$(dirname "$0")/../../.."
export MIA_DATA_DIR=${MIA_DATA_DIR:-/tmp/demo_try}  # a data dir with the Qwen GGUF in models/
date
/usr/bin/time -f "%e s" .venv/bin/mia ask "Which magazine was published first, Woman's Day or The Lady?" --gold "The Lady" --namespace demo
date
/usr/bin/time -f "%e s" .venv/bin/mia ask "Which women's magazine was published first, Mirabella or Home Monthly?" --gold "Home Monthly" --namespace demo
date
