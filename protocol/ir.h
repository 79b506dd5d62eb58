/*
 * The vyre IR, version 1 (DESIGN.md §3), as C data. A struct vy_program owns an arena that holds
 * every buffer, node, expression and name of the program; destroying the program frees them all.
 *
 * The builder functions below construct programs from C; the codec (codec.h) reads and writes the
 * msgpack and JSON forms; the validator (validate.h) checks a program and fills in the type of
 * every expression.
 *
 * Thread-safety: a program is immutable once built and validated, and may then be read by any
 * number of threads. Building is single-threaded.
 */
#ifndef VY_PROTOCOL_IR_H
#define VY_PROTOCOL_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vy_arena;

#define VY_IR_VERSION 1
#define VY_IR_MAX_BUFFERS 32
#define VY_IR_MAX_NAME 64
#define VY_IR_MAX_NESTING 64
#define VY_IR_MAX_NODES 100000
#define VY_IR_MAX_EXPR_DEPTH 128
#define VY_IR_MAX_DOCUMENT ((size_t)16 * 1024 * 1024)

/* X(enum suffix, wire name) tables: the enum and the names come from one list. */
#define VY_TYPE_MAP(X) X(U32, "u32") X(I32, "i32") X(F32, "f32") X(BOOL, "bool")

#define VY_ACCESS_MAP(X)                                                                           \
	X(READ_ONLY, "read_only")                                                                  \
	X(READ_WRITE, "read_write")                                                                \
	X(WRITE_ONLY, "write_only")                                                                \
	X(UNIFORM, "uniform")                                                                      \
	X(WORKGROUP, "workgroup")

#define VY_LOCALITY_MAP(X) X(TEMPORAL, "temporal") X(STREAMING, "streaming") X(RANDOM, "random")

#define VY_ORDER_MAP(X)                                                                            \
	X(SEQ_CST, "seq_cst")                                                                      \
	X(ACQUIRE, "acquire")                                                                      \
	X(RELEASE, "release")                                                                      \
	X(ACQ_REL, "acq_rel")                                                                      \
	X(GRID_SYNC, "grid_sync")

#define VY_BINOP_MAP(X)                                                                            \
	X(ADD, "add")                                                                              \
	X(SUB, "sub")                                                                              \
	X(MUL, "mul")                                                                              \
	X(DIV, "div")                                                                              \
	X(MOD, "mod")                                                                              \
	X(BIT_AND, "bit_and")                                                                      \
	X(BIT_OR, "bit_or")                                                                        \
	X(BIT_XOR, "bit_xor")                                                                      \
	X(SHL, "shl")                                                                              \
	X(SHR, "shr")                                                                              \
	X(EQ, "eq")                                                                                \
	X(NE, "ne")                                                                                \
	X(LT, "lt")                                                                                \
	X(LE, "le")                                                                                \
	X(GT, "gt")                                                                                \
	X(GE, "ge")                                                                                \
	X(AND, "and")                                                                              \
	X(OR, "or")                                                                                \
	X(MIN, "min")                                                                              \
	X(MAX, "max")                                                                              \
	X(ABS_DIFF, "abs_diff")                                                                    \
	X(SAT_ADD, "sat_add")                                                                      \
	X(SAT_SUB, "sat_sub")                                                                      \
	X(SAT_MUL, "sat_mul")                                                                      \
	X(ROTL, "rotl")                                                                            \
	X(ROTR, "rotr")                                                                            \
	X(MUL_HIGH, "mul_high")                                                                    \
	X(HYPOT, "hypot")                                                                          \
	X(ATAN2, "atan2")                                                                          \
	X(POW, "pow")

#define VY_UNOP_MAP(X)                                                                             \
	X(NEG, "neg")                                                                              \
	X(BIT_NOT, "bit_not")                                                                      \
	X(NOT, "not")                                                                              \
	X(POPCOUNT, "popcount")                                                                    \
	X(CLZ, "clz")                                                                              \
	X(CTZ, "ctz")                                                                              \
	X(REVERSE_BITS, "reverse_bits")                                                            \
	X(ABS, "abs")                                                                              \
	X(SIGN, "sign")                                                                            \
	X(FLOOR, "floor")                                                                          \
	X(CEIL, "ceil")                                                                            \
	X(ROUND, "round")                                                                          \
	X(TRUNC, "trunc")                                                                          \
	X(SQRT, "sqrt")                                                                            \
	X(INVERSE_SQRT, "inverse_sqrt")                                                            \
	X(RECIPROCAL, "reciprocal")                                                                \
	X(EXP, "exp")                                                                              \
	X(EXP2, "exp2")                                                                            \
	X(EXP10, "exp10")                                                                          \
	X(EXPM1, "expm1")                                                                          \
	X(LOG, "log")                                                                              \
	X(LOG2, "log2")                                                                            \
	X(LOG10, "log10")                                                                          \
	X(LOG1P, "log1p")                                                                          \
	X(CBRT, "cbrt")                                                                            \
	X(SIN, "sin")                                                                              \
	X(COS, "cos")                                                                              \
	X(TAN, "tan")                                                                              \
	X(ASIN, "asin")                                                                            \
	X(ACOS, "acos")                                                                            \
	X(ATAN, "atan")                                                                            \
	X(SINH, "sinh")                                                                            \
	X(COSH, "cosh")                                                                            \
	X(TANH, "tanh")                                                                            \
	X(ERF, "erf")                                                                              \
	X(ERFC, "erfc")                                                                            \
	X(IS_NAN, "is_nan")                                                                        \
	X(IS_INF, "is_inf")                                                                        \
	X(IS_FINITE, "is_finite")                                                                  \
	X(UNPACK4_LOW, "unpack4_low")                                                              \
	X(UNPACK4_HIGH, "unpack4_high")                                                            \
	X(UNPACK8_LOW, "unpack8_low")                                                              \
	X(UNPACK8_HIGH, "unpack8_high")                                                            \
	X(EXP_CR, "exp_cr")                                                                        \
	X(EXP2_CR, "exp2_cr")                                                                      \
	X(LOG_CR, "log_cr")                                                                        \
	X(LOG2_CR, "log2_cr")

#define VY_ATOMIC_MAP(X)                                                                           \
	X(ADD, "add")                                                                              \
	X(AND, "and")                                                                              \
	X(OR, "or")                                                                                \
	X(XOR, "xor")                                                                              \
	X(MIN, "min")                                                                              \
	X(MAX, "max")                                                                              \
	X(EXCHANGE, "exchange")                                                                    \
	X(COMPARE_EXCHANGE, "compare_exchange")

#define VY_REDUCE_MAP(X)                                                                           \
	X(ADD, "add")                                                                              \
	X(MUL, "mul") X(MIN, "min") X(MAX, "max") X(AND, "and") X(OR, "or") X(XOR, "xor")

#define VY__ENUM_TYPE(suffix, wire) VY_TYPE_##suffix,
enum vy_type { VY_TYPE_MAP(VY__ENUM_TYPE) VY_TYPE_COUNT, VY_TYPE_NONE = VY_TYPE_COUNT };
#undef VY__ENUM_TYPE
#define VY__ENUM_ACCESS(suffix, wire) VY_ACCESS_##suffix,
enum vy_access { VY_ACCESS_MAP(VY__ENUM_ACCESS) VY_ACCESS_COUNT };
#undef VY__ENUM_ACCESS
#define VY__ENUM_LOCALITY(suffix, wire) VY_LOCALITY_##suffix,
enum vy_locality { VY_LOCALITY_MAP(VY__ENUM_LOCALITY) VY_LOCALITY_COUNT };
#undef VY__ENUM_LOCALITY
#define VY__ENUM_ORDER(suffix, wire) VY_ORDER_##suffix,
enum vy_order { VY_ORDER_MAP(VY__ENUM_ORDER) VY_ORDER_COUNT };
#undef VY__ENUM_ORDER
#define VY__ENUM_BINOP(suffix, wire) VY_BIN_##suffix,
enum vy_binop { VY_BINOP_MAP(VY__ENUM_BINOP) VY_BINOP_COUNT };
#undef VY__ENUM_BINOP
#define VY__ENUM_UNOP(suffix, wire) VY_UN_##suffix,
enum vy_unop { VY_UNOP_MAP(VY__ENUM_UNOP) VY_UNOP_COUNT };
#undef VY__ENUM_UNOP
#define VY__ENUM_ATOMIC(suffix, wire) VY_ATOMIC_##suffix,
enum vy_atomic_op { VY_ATOMIC_MAP(VY__ENUM_ATOMIC) VY_ATOMIC_COUNT };
#undef VY__ENUM_ATOMIC
#define VY__ENUM_REDUCE(suffix, wire) VY_REDUCE_##suffix,
enum vy_reduce_op { VY_REDUCE_MAP(VY__ENUM_REDUCE) VY_REDUCE_COUNT };
#undef VY__ENUM_REDUCE

/* Wire names and reverse lookups; a lookup returns -1 for an unknown name. */
const char *vy_type_name(enum vy_type t);
const char *vy_access_name(enum vy_access a);
const char *vy_locality_name(enum vy_locality l);
const char *vy_order_name(enum vy_order o);
const char *vy_binop_name(enum vy_binop op);
const char *vy_unop_name(enum vy_unop op);
const char *vy_atomic_name(enum vy_atomic_op op);
const char *vy_reduce_name(enum vy_reduce_op op);
int vy_type_from_name(const char *name, size_t len);
int vy_access_from_name(const char *name, size_t len);
int vy_locality_from_name(const char *name, size_t len);
int vy_order_from_name(const char *name, size_t len);
int vy_binop_from_name(const char *name, size_t len);
int vy_unop_from_name(const char *name, size_t len);
int vy_atomic_from_name(const char *name, size_t len);
int vy_reduce_from_name(const char *name, size_t len);

/* Bytes one element of the type occupies in a buffer (bool is one u32 word). */
static inline uint32_t vy_type_size(enum vy_type t)
{
	(void)t;
	return 4;
}

struct vy_hints {
	uint32_t alignment;    /* bytes; 0 or a power of two */
	int32_t coalesce_axis; /* 0..2, or -1 for none */
	enum vy_locality locality;
};

struct vy_buffer {
	const char *name;
	uint32_t binding;
	enum vy_access access;
	enum vy_type type;
	uint32_t count; /* elements; 0 = sized by its input at dispatch */
	bool output;    /* is_output: backend-allocated, zero-filled */
	bool live_out;  /* pipeline_live_out */
	bool has_hints;
	struct vy_hints hints;
};

enum vy_expr_kind {
	VY_EXPR_LIT,    /* type, bits */
	VY_EXPR_VAR,    /* name */
	VY_EXPR_LOAD,   /* name = buffer, args[0] = index */
	VY_EXPR_LEN,    /* name = buffer */
	VY_EXPR_GID,    /* bits = axis */
	VY_EXPR_LID,    /* bits = axis */
	VY_EXPR_WGID,   /* bits = axis */
	VY_EXPR_BINARY, /* op = enum vy_binop, args[0..1] */
	VY_EXPR_UNARY,  /* op = enum vy_unop, args[0] */
	VY_EXPR_SELECT, /* args[0] = cond, args[1] = then, args[2] = else */
	VY_EXPR_CAST,   /* type = target, args[0] */
	VY_EXPR_FMA,    /* args[0..2] */
	VY_EXPR_ATOMIC, /* op = enum vy_atomic_op, name = buffer, args: index, [expected,] value */
	VY_EXPR_SPEC,   /* name, type, bits = default */
	VY_EXPR_SUBGROUP_REDUCE,  /* op = enum vy_reduce_op, args[0] */
	VY_EXPR_SUBGROUP_SHUFFLE, /* args[0] = value, args[1] = lane */
	VY_EXPR_SUBGROUP_BALLOT,  /* args[0] = cond */
	VY_EXPR_SUBGROUP_LANE,
	VY_EXPR_SUBGROUP_SIZE,
	VY_EXPR_BITCAST, /* type = target, args[0]: the same 32 bits as another type */
	VY_EXPR_KIND_COUNT
};

struct vy_expr {
	enum vy_expr_kind kind;
	uint32_t op;
	/*
	 * For literals, casts, bitcasts and spec constants: the type written in the program. For
	 * every other
	 * kind: VY_TYPE_NONE until the validator records the result type.
	 */
	enum vy_type type;
	uint32_t bits; /* literal or spec default (u32, i32 two's complement, f32 bits, bool 0/1);
			  axis */
	const char *name;
	uint32_t nargs;
	struct vy_expr *args[3];
};

enum vy_node_kind {
	VY_NODE_LET,    /* name, args[0] = value */
	VY_NODE_ASSIGN, /* name, args[0] = value */
	VY_NODE_STORE,  /* name = buffer, args[0] = index, args[1] = value */
	VY_NODE_IF,     /* args[0] = cond, body = then, orelse = else */
	VY_NODE_LOOP,   /* name = variable, args[0] = from, args[1] = to, body */
	VY_NODE_RETURN,
	VY_NODE_BLOCK,   /* body */
	VY_NODE_REGION,  /* name = generator, body */
	VY_NODE_BARRIER, /* order */
	VY_NODE_KIND_COUNT
};

struct vy_node;

struct vy_block {
	struct vy_node **items;
	uint32_t len;
};

struct vy_node {
	enum vy_node_kind kind;
	enum vy_order order;
	const char *name; /* let, assign, loop; an if inserted by the math-library lowering */
	struct vy_expr *args[2];
	struct vy_block body;
	struct vy_block orelse;
};

struct vy_program {
	struct vy_arena *arena; /* owned: holds everything below */
	uint32_t version;
	const char *name; /* NULL when the program has no label */
	uint32_t workgroup_size[3];
	uint32_t n_buffers;
	struct vy_buffer *buffers; /* VY_IR_MAX_BUFFERS slots */
	struct vy_block entry;
};

const char *vy_node_kind_name(enum vy_node_kind kind);
const char *vy_expr_kind_name(enum vy_expr_kind kind);

/*
 * Builders. Every builder allocates from the program's arena and copies the strings it is given;
 * the results belong to the program. Builders do not validate: run vy_validate on the result.
 */

/* A new empty program (IR version 1). `name` may be NULL. Never returns NULL. */
struct vy_program *vy_program_create(const char *name, uint32_t wx, uint32_t wy, uint32_t wz);
/* Free the program and everything built in it. NULL is accepted. */
void vy_program_destroy(struct vy_program *program);

/* Append a buffer declaration; returns it for setting output, live_out and hints, or NULL when the
 * program already holds VY_IR_MAX_BUFFERS buffers. */
struct vy_buffer *vy_program_add_buffer(struct vy_program *p, const char *name, uint32_t binding,
	enum vy_access access, enum vy_type type, uint32_t count);
/* Find a buffer by name, or NULL. */
const struct vy_buffer *vy_program_find_buffer(const struct vy_program *p, const char *name);

struct vy_expr *vy_ir_lit(struct vy_program *p, enum vy_type type, uint32_t bits);
struct vy_expr *vy_ir_u32(struct vy_program *p, uint32_t v);
struct vy_expr *vy_ir_i32(struct vy_program *p, int32_t v);
struct vy_expr *vy_ir_f32(struct vy_program *p, float v);
struct vy_expr *vy_ir_bool(struct vy_program *p, bool v);
struct vy_expr *vy_ir_var(struct vy_program *p, const char *name);
struct vy_expr *vy_ir_load(struct vy_program *p, const char *buffer, struct vy_expr *index);
struct vy_expr *vy_ir_len(struct vy_program *p, const char *buffer);
struct vy_expr *vy_ir_gid(struct vy_program *p, uint32_t axis);
struct vy_expr *vy_ir_lid(struct vy_program *p, uint32_t axis);
struct vy_expr *vy_ir_wgid(struct vy_program *p, uint32_t axis);
struct vy_expr *vy_ir_binary(
	struct vy_program *p, enum vy_binop op, struct vy_expr *a, struct vy_expr *b);
struct vy_expr *vy_ir_unary(struct vy_program *p, enum vy_unop op, struct vy_expr *a);
struct vy_expr *vy_ir_select(
	struct vy_program *p, struct vy_expr *cond, struct vy_expr *a, struct vy_expr *b);
struct vy_expr *vy_ir_cast(struct vy_program *p, enum vy_type type, struct vy_expr *a);
/* The bits of `a` read as `type` (u32, i32 or f32; docs/ir.md section 8.9). */
struct vy_expr *vy_ir_bitcast(struct vy_program *p, enum vy_type type, struct vy_expr *a);
struct vy_expr *vy_ir_fma(
	struct vy_program *p, struct vy_expr *a, struct vy_expr *b, struct vy_expr *c);
/* `op` other than VY_ATOMIC_COMPARE_EXCHANGE. */
struct vy_expr *vy_ir_atomic(struct vy_program *p, enum vy_atomic_op op, const char *buffer,
	struct vy_expr *index, struct vy_expr *value);
struct vy_expr *vy_ir_atomic_cas(struct vy_program *p, const char *buffer, struct vy_expr *index,
	struct vy_expr *expected, struct vy_expr *value);
struct vy_expr *vy_ir_spec(
	struct vy_program *p, const char *name, enum vy_type type, uint32_t default_bits);
struct vy_expr *vy_ir_subgroup_reduce(
	struct vy_program *p, enum vy_reduce_op op, struct vy_expr *a);
struct vy_expr *vy_ir_subgroup_shuffle(
	struct vy_program *p, struct vy_expr *value, struct vy_expr *lane);
struct vy_expr *vy_ir_subgroup_ballot(struct vy_program *p, struct vy_expr *cond);
struct vy_expr *vy_ir_subgroup_lane(struct vy_program *p);
struct vy_expr *vy_ir_subgroup_size(struct vy_program *p);

struct vy_node *vy_ir_let(struct vy_program *p, const char *name, struct vy_expr *value);
struct vy_node *vy_ir_assign(struct vy_program *p, const char *name, struct vy_expr *value);
struct vy_node *vy_ir_store(
	struct vy_program *p, const char *buffer, struct vy_expr *index, struct vy_expr *value);
struct vy_node *vy_ir_if(struct vy_program *p, struct vy_expr *cond, struct vy_block then_body,
	struct vy_block else_body);
struct vy_node *vy_ir_loop(struct vy_program *p, const char *var, struct vy_expr *from,
	struct vy_expr *to, struct vy_block body);
struct vy_node *vy_ir_return(struct vy_program *p);
struct vy_node *vy_ir_block(struct vy_program *p, struct vy_block body);
struct vy_node *vy_ir_region(struct vy_program *p, const char *generator, struct vy_block body);
struct vy_node *vy_ir_barrier(struct vy_program *p, enum vy_order order);

/* A block of the given nodes, terminated by NULL: vy_ir_seq(p, a, b, NULL). */
struct vy_block vy_ir_seq(struct vy_program *p, ...);
/* A block copied from an array of `n` nodes. */
struct vy_block vy_ir_seqv(struct vy_program *p, struct vy_node *const *nodes, uint32_t n);

/* Set the entry block. */
void vy_program_set_entry(struct vy_program *p, struct vy_block entry);

/* Deep copy of `src` into a new program with its own arena. Recursion follows the program's
 * nesting: call it on decoded or validated programs, whose depth the IR limits bound. */
struct vy_program *vy_program_clone(const struct vy_program *src);

/* Count of nodes in a block, recursively, for decoded or validated programs (see clone). */
uint32_t vy_block_count_nodes(const struct vy_block *block);

/* Room for the longest path index, "[4294967295]". */
#define VY_PATH_INDEX_ROOM 12

/*
 * The index part of a node path ("[3]" in "entry[3].body[0]"), written at the end of `room`
 * (VY_PATH_INDEX_ROOM bytes, not NUL-terminated): returns its first byte, its length in *len.
 */
const char *vy_path_index(uint32_t i, char *room, size_t *len);

#endif
