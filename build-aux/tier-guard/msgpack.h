/* Tier guard: this directory comes first on the include path of tier-1 modules (planner/,
 * backend/ apart from backend/vulkan). Reaching this file means a pure module included <msgpack.h>,
 * which its tier may not use (DESIGN.md §2). */
#error "<msgpack.h> is not available to this tier (DESIGN.md §2): move the code to a higher tier"
