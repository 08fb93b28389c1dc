#!/usr/bin/env bash
# Run make in the build-root kernel tree with the exact flags make kernel
# uses (same CC string and ccache settings, so objects are reused):
#   scripts/kmake.sh io_uring/     scripts/kmake.sh bzImage
set -euo pipefail
. "$(dirname "$0")/common.sh"
exec "${KMAKE[@]}" "$@"
