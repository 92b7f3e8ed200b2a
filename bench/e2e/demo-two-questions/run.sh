#!/usr/bin/env bash
# Ask one pair of related questions in one memory namespace with the defaults (see README.md):
#   bash run.sh magazines | documentaries       (MIA_DATA_DIR: a data dir with the Qwen GGUF in models/)
set -u
cd "$(dirname "$0")/../../.."
export MIA_DATA_DIR=${MIA_DATA_DIR:-/tmp/demo_try}
case "${1:-}" in
  magazines) ns=demo
    pair=("Which magazine was published first, Woman's Day or The Lady?" "The Lady"
          "Which women's magazine was published first, Mirabella or Home Monthly?" "Home Monthly") ;;
  documentaries) ns=demo2
    pair=("Which documentary film was created first, The End of Suburbia or Super High Me?" "The End of Suburbia"
          "Which documentary film was released first, Chicken Ranch or The End of Suburbia?" "Chicken Ranch") ;;
  *) echo "usage: bash run.sh magazines|documentaries" >&2; exit 2 ;;
esac
for i in 0 2; do
  date
  /usr/bin/time -f "%e s" .venv/bin/mia ask "${pair[$i]}" --gold "${pair[$((i + 1))]}" --namespace "$ns"
done
date
