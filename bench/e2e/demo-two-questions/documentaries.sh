cd "$(dirname "$0")/../../.."
export MIA_DATA_DIR=${MIA_DATA_DIR:-/tmp/demo_try}  # a data dir with the Qwen GGUF in models/
date
/usr/bin/time -f "%e s" .venv/bin/mia ask "Which documentary film was created first, The End of Suburbia or Super High Me?" --gold "The End of Suburbia" --namespace demo2
date
/usr/bin/time -f "%e s" .venv/bin/mia ask "Which documentary film was released first, Chicken Ranch or The End of Suburbia?" --gold "Chicken Ranch" --namespace demo2
date
