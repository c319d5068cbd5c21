#!/usr/bin/env python3
"""Check the layering of libnnpipe and the plugin: includes and calls (issues 11, 24).

  tools/check-layers.py [--list | --layers | --self-test] [SOURCE_ROOT]

Reads every #include line (and the functions each file defines and calls) of
lib/, plugins/ and include/nnpipe/, then checks:

 1. Layers.  libnnpipe's folders are layers, bottom up (LAYERS below,
    docs/architecture.md "Layers"): core (lib/*.c, lib/backend.h), graph,
    ops, onnx, backends, specialize, exec, partition, remote, pipeline.  A
    file may include headers of its own layer and the layers below, and
    call functions defined there, never above:
      - an internal header (lib/...) belongs to the layer of its folder;
      - a public header (include/nnpipe/X.h) belongs to the layer that
        implements it: the one whose files define the functions it
        declares (learnt from the tree; a public header implemented in two
        layers is itself a violation: one header, one layer);
      - a call edge A -> B (A uses a function with external linkage defined
        in B) is judged by the layers of A and B, so a climb through a
        public header is seen too.
    Besides: lib/ includes nothing from plugins/ and no <gst/...>;
    plugins/pre/, plugins/post/ include nothing from the rest of plugins/, no
    <gst/...>; post/ nothing from pre/ (includes and calls).
 2. No loops between files: file A calls a function defined in file B (so it
    includes B's header) and B, directly or through other files, calls one
    defined in A.  A header counts as part of the .c file of the same stem.
    Only functions with external linkage count (static ones are private).
 3. Every quoted #include names a header that exists.
 4. A backend's folder is private: only lib/backends/<name>/ includes headers
    of lib/backends/<name>/ (the rest of the library goes through the table
    of lib/backend.h; lib/backends/registry.c names backends by their table
    only, with an extern declaration).

Known violations are on ALLOWED below, each with its reason; the list may
only shrink: an entry that no longer matches anything is an error too, so a
fixed violation is taken off the list.  It is empty.
--list prints every file-to-file call edge (A -> B: symbols) and exits 0;
--layers prints each public header's layer and each layer's files;
--self-test checks the checker on a small tree with one of each violation.
Exits 1 naming each violation, 0 when the tree is clean.
"""
import os
import re
import sys

# ------------------------------------------------------------------ the rules

# libnnpipe's layers, bottom up: each may use its own and those before it.
LAYERS = ["core", "graph", "ops", "onnx", "backends", "specialize", "exec", "partition",
          "remote", "pipeline"]


def forbidden(layer):
    """Layers a file of `layer` must not include from or call into."""
    if layer in LAYERS:
        return set(LAYERS[LAYERS.index(layer) + 1:]) | {"plugins"}
    # plugins/pre/, plugins/post/: pre- and post-processing algorithms, no
    # GStreamer, no element code; pre/ may use post/'s box geometry
    if layer == "pre":
        return {"plugins"}
    if layer == "post":
        return {"plugins", "pre"}
    if layer == "public":
        return set(LAYERS) | {"plugins", "pre", "post"}
    return set()


# Known violations, each "A -> B" (include edge: A includes header B; call
# edge: A calls a function defined in B), mapped to the reason.  Shrink only.
ALLOWED = {}


def backend_folder(rel):
    """"cpu" for lib/backends/cpu/..., else None."""
    parts = rel.split("/")
    if len(parts) > 3 and parts[0] == "lib" and parts[1] == "backends":
        return parts[2]
    return None


# ------------------------------------------------------------------ parsing

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
# GNU style: the function name starts a line, its type is on the line above.
DEF_RE = re.compile(r'^([a-z_][a-z0-9_]*)\s*\(', re.M)
IDENT_RE = re.compile(r'\b[A-Za-z_][A-Za-z0-9_]*\b')


def strip_comments_and_strings(text):
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def layer_of(rel):
    parts = rel.split("/")
    if parts[0] == "include":
        return "public"
    if parts[0] == "plugins":
        return parts[1] if len(parts) > 2 and parts[1] in ("pre", "post") else "plugins"
    if parts[0] == "lib":
        if rel == "lib/backend.h":
            return "backends"  # the backends' interface, implemented there
        return parts[1] if len(parts) > 2 else "core"
    return None


def collect(root):
    files = []
    for top in ("lib", "plugins", os.path.join("include", "nnpipe")):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for f in sorted(filenames):
                if f.endswith((".c", ".h", ".inc")):
                    files.append(os.path.relpath(os.path.join(dirpath, f), root))
    return files


def resolve(root, rel, kind, name):
    """Path (relative to root) of an included header, None for system ones."""
    here = os.path.dirname(rel)
    if kind == "<":
        if name.startswith("nnpipe/"):
            return os.path.join("include", name)
        return None
    for base in (here, "lib", "include", "plugins", "plugins/elements", "plugins/common",
                 "plugins/pre", "plugins/post"):
        cand = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return "?" + name


def unit_of(rel, existing):
    """The .c file a header belongs to (same stem, same folder), else itself."""
    if rel.endswith(".h"):
        c = rel[:-2] + ".c"
        if c in existing:
            return c
    return rel


def generated(root, rel, name):
    """Headers the build generates (not in the source tree): named in the
    meson.build of the folder they would be in.  config.h is the usual
    optional HAVE_CONFIG_H header (guarded, never generated here)."""
    if name == "config.h":
        return True
    base = os.path.join(os.path.dirname(rel), name)
    for cand in (base, os.path.join("lib", name)):
        build = os.path.join(os.path.dirname(os.path.join(root, cand)), "meson.build")
        if os.path.isfile(build):
            with open(build) as f:
                if os.path.basename(name) in f.read():
                    return True
    return False


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    root = os.path.abspath(root)
    if "--self-test" in argv:
        return self_test()
    if "--layers" in argv:
        files, text = read_tree(root)
        header_layer, multi = public_header_layers(root, files, text)
        for h in sorted(header_layer):
            print("%-32s %s%s" % (h, header_layer[h], "  (several!)" if h in multi else ""))
        for layer in LAYERS:
            print("%-10s %s" % (layer, " ".join(f for f in files if layer_of(f) == layer
                                                 and f.endswith(".c"))))
        return 0
    if "--list" in argv:
        for a, b, syms in call_edges(root):
            print("%s -> %s: %s" % (a, b, " ".join(sorted(syms))))
        return 0
    errors, n_files, n_allowed = check(root, ALLOWED)
    for e in errors:
        print("check-layers: " + e)
    print("check-layers: %d files, %d violation(s), %d allowed"
          % (n_files, len(errors), n_allowed))
    return 1 if errors else 0


def read_tree(root):
    files = collect(root)
    text = {}
    for rel in files:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text[rel] = f.read()
    return files, text


DECL_RE = re.compile(r'\b(nnp_[a-z0-9_]+)\s*\(')


def declared_functions(text):
    """nnp_ functions a header declares (prototypes at file scope, not
    typedefs or static inline bodies)."""
    body = strip_comments_and_strings(text)
    body = re.sub(r'^\s*#(?:[^\n]*\\\n)*[^\n]*', ' ', body, flags=re.M)
    names, depth, stmt = set(), 0, []
    for c in body:
        if depth > 0:
            depth += (c == "{") - (c == "}")
            continue
        if c == "{":
            depth, stmt = 1, []
        elif c == ";":
            st = "".join(stmt)
            stmt = []
            if re.match(r'\s*(typedef|static)\b', st):
                continue
            m = DECL_RE.search(st)
            if m:
                names.add(m.group(1))
        else:
            stmt.append(c)
    return names


def public_header_layers(root, files, text):
    """{header: layer} of the public headers that declare functions, and
    {header: {layer: files}} of those implemented in more than one layer."""
    defined = definitions(files, text)
    layers, multi = {}, {}
    for rel in files:
        if not rel.startswith("include/"):
            continue
        by = {}
        for name in declared_functions(text[rel]):
            if name in defined:
                by.setdefault(layer_of(defined[name]), set()).add(defined[name])
        if len(by) == 1:
            layers[rel] = next(iter(by))
        elif len(by) > 1:
            multi[rel] = by
            # judged as its lowest layer (the violation is reported once)
            layers[rel] = min(by, key=lambda l: LAYERS.index(l) if l in LAYERS else -1)
    return layers, multi


def definitions(files, text):
    """symbol -> .c file defining it with external linkage."""
    defined = {}
    for rel in files:
        if not rel.endswith(".c"):
            continue
        lines = strip_comments_and_strings(text[rel]).split("\n")
        for i, line in enumerate(lines):
            m = DEF_RE.match(line)
            if not m or i == 0:
                continue
            prev = lines[i - 1].strip()
            if not prev or prev.endswith((";", "{", "}", ",")) or prev.startswith("#"):
                continue
            if re.search(r'\bstatic\b', prev) or line.rstrip().endswith(";"):
                continue
            defined.setdefault(m.group(1), rel)
    return defined


def call_edges(root):
    """(A, B, symbols): file A calls functions defined in file B."""
    files, text = read_tree(root)
    existing = set(files)
    defined = definitions(files, text)
    edges = {}     # unit -> {unit -> set(symbols)}
    for rel in files:
        src = unit_of(rel, existing)
        body = strip_comments_and_strings(text[rel])
        for ident in set(IDENT_RE.findall(body)):
            dst = defined.get(ident)
            if dst and dst != src:
                edges.setdefault(src, {}).setdefault(dst, set()).add(ident)
    return [(a, b, edges[a][b]) for a in sorted(edges) for b in sorted(edges[a])]


def check(root, allowed):
    """Violations (strings), files read, allow-list entries used."""
    files, text = read_tree(root)
    errors = []
    used_allow = set()
    header_layer, multi = public_header_layers(root, files, text)
    for h, layers in sorted(multi.items()):
        errors.append("%s is implemented in %d layers (%s): one public header, one layer"
                      % (h, len(layers), ", ".join("%s: %s" % (l, " ".join(sorted(f)[:3]))
                                                   for l, f in sorted(layers.items()))))

    # 1 + 3: includes and layers
    for rel in files:
        src_layer = layer_of(rel)
        for m in INCLUDE_RE.finditer(strip_comments_and_strings_keep_includes(text[rel])):
            kind, name = m.group(1), m.group(2)
            if kind == "<" and name.startswith("gst/") and rel.startswith("lib/"):
                errors.append("%s: includes <%s>: libnnpipe has no GStreamer in it" % (rel, name))
                continue
            if kind == "<" and name.startswith("gst/") and rel.startswith(
                    ("plugins/pre/", "plugins/post/")):
                errors.append("%s: includes <%s>: plugins/%s/ holds algorithms without "
                              "GStreamer" % (rel, name, rel.split("/")[1]))
                continue
            dep = resolve(root, rel, kind, name)
            if dep is None:
                continue
            if dep.startswith("?"):
                if not generated(root, rel, name):
                    errors.append("%s: includes \"%s\", which does not exist" % (rel, name))
                continue
            dst_layer = layer_of(dep)
            if dst_layer == "public" and src_layer != "public":
                # a public header counts as the layer that implements it
                dst_layer = header_layer.get(dep, "public")
            key = (rel, dep)
            if dst_layer in forbidden(src_layer):
                if key in allowed:
                    used_allow.add(key)
                else:
                    errors.append("%s includes %s: the %s layer may not include from %s"
                                  % (rel, dep, src_layer, dst_layer))
            elif backend_folder(dep) and backend_folder(dep) != backend_folder(rel):
                if key in allowed:
                    used_allow.add(key)
                else:
                    errors.append("%s includes %s: only lib/backends/%s/ may name the %s backend "
                                  "(go through lib/backend.h)"
                                  % (rel, dep, backend_folder(dep), backend_folder(dep)))

    # 2: call edges between files and loops
    edges = {}
    for a, b, syms in call_edges(root):
        edges.setdefault(a, {})[b] = syms

    for a, outs in sorted(edges.items()):
        la = layer_of(a)
        for b in sorted(outs):
            lb = layer_of(b)
            if lb in forbidden(la) and la not in ("public", "plugins"):
                if (a, b) in allowed:
                    used_allow.add((a, b))
                else:
                    errors.append("%s calls %s (%s): the %s layer may not call into %s"
                                  % (a, b, ", ".join(sorted(outs[b])[:4]), la, lb))

    graph = {}
    for a, outs in edges.items():
        for b in outs:
            if (a, b) in allowed:
                used_allow.add((a, b))
                continue
            graph.setdefault(a, set()).add(b)
    for scc in strongly_connected(graph):
        if len(scc) < 2:
            continue
        members = sorted(scc)
        detail = []
        for a in members:
            for b in sorted(graph.get(a, ())):
                if b in scc:
                    detail.append("  %s -> %s (%s)" % (a, b, ", ".join(sorted(edges[a][b])[:4])))
        errors.append("loop between %s:\n%s" % (", ".join(members), "\n".join(detail)))

    for key in sorted(set(allowed) - used_allow):
        errors.append("allow-list entry %s -> %s matches nothing any more: take it off ALLOWED "
                      "in tools/check-layers.py" % key)
    return errors, len(files), len(used_allow)


def self_test():
    """The checker finds what it should, on a small tree written here."""
    import tempfile
    tree = {
        "include/nnpipe/pub.h": '#include "../../lib/exec/x.h"\n',
        "lib/graph/g.c": '#include "backends/cpu/k.h"\n#include "missing.h"\n'
                         'void\ng_fn (void)\n{\n  k_fn ();\n}\n',
        "lib/backends/cpu/k.h": '#include "exec/x.h"\nvoid k_fn (void);\n',
        "lib/backends/cpu/k.c": '#include "backends/cpu/k.h"\n'
                                'void\nk_fn (void)\n{\n  g_fn ();\n}\n'
                                'static void\nk_private (void)\n{\n}\n',
        "lib/exec/x.h": "#pragma once\n",
        "lib/exec/s.c": '#include "backends/cpu/k.h"\n',
        "lib/ok.c": '#include <gst/gst.h>\nstatic int\nk_private (void)\n{\n  return 0;\n}\n',
        "plugins/a.c": 'void\na_fn (void)\n{\n  b_fn ();\n}\n',
        "plugins/b.c": 'void\nb_fn (void)\n{\n  a_fn ();\n}\n',
        # a public header of the exec layer, included from ops; a call from
        # graph into exec without any include (through a public header)
        "include/nnpipe/xp.h": 'void nnp_xp (void);\n',
        "lib/exec/xp.c": '#include <nnpipe/xp.h>\nvoid\nnnp_xp (void)\n{\n}\n',
        "lib/ops/o.c": '#include <nnpipe/xp.h>\n',
        "lib/graph/climb.c": 'void\nclimb_fn (void)\n{\n  nnp_xp ();\n}\n',
        # a public header implemented in two layers
        "include/nnpipe/two.h": 'void nnp_two_a (void);\nvoid nnp_two_b (void);\n',
        "lib/graph/two-a.c": 'void\nnnp_two_a (void)\n{\n}\n',
        "lib/partition/two-b.c": 'void\nnnp_two_b (void)\n{\n}\n',
        "plugins/pre/p.c": '#include <gst/gst.h>\n',
        "plugins/post/q.c": '#include "../pre/r.h"\n',
        "plugins/pre/r.h": "#pragma once\n",
    }
    expect = [
        "include/nnpipe/pub.h includes lib/exec/x.h: the public layer may not include from exec",
        "lib/graph/g.c includes lib/backends/cpu/k.h: the graph layer",
        "includes \"missing.h\", which does not exist",
        "lib/backends/cpu/k.h includes lib/exec/x.h: the backends layer",
        "lib/exec/s.c includes lib/backends/cpu/k.h: only lib/backends/cpu/ may name",
        "lib/ok.c: includes <gst/gst.h>",
        "loop between lib/backends/cpu/k.c, lib/graph/g.c",
        "loop between plugins/a.c, plugins/b.c",
        "plugins/pre/p.c: includes <gst/gst.h>",
        "plugins/post/q.c includes plugins/pre/r.h: the post layer may not include from pre",
        "allow-list entry lib/x.c -> lib/y.c matches nothing",
        "lib/graph/g.c calls lib/backends/cpu/k.c (k_fn): the graph layer may not call into "
        "backends",
        "lib/ops/o.c includes include/nnpipe/xp.h: the ops layer may not include from exec",
        "lib/graph/climb.c calls lib/exec/xp.c (nnp_xp): the graph layer may not call into exec",
        "include/nnpipe/two.h is implemented in 2 layers (graph: lib/graph/two-a.c, partition: "
        "lib/partition/two-b.c)",
    ]
    with tempfile.TemporaryDirectory() as root:
        for rel, body in tree.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(body)
        errors, _, _ = check(root, {("lib/x.c", "lib/y.c"): "stale"})
        allowed_errors, _, used = check(root, {("lib/graph/g.c", "lib/backends/cpu/k.h"): "test"})
    ok = True
    for e in expect:
        if not any(e in got for got in errors):
            print("check-layers self-test: not found: %s" % e)
            ok = False
    if len(errors) != len(expect):
        print("check-layers self-test: %d violations, expected %d:\n  %s"
              % (len(errors), len(expect), "\n  ".join(errors)))
        ok = False
    if used != 1 or any("g.c includes lib/backends/cpu/k.h" in e for e in allowed_errors):
        print("check-layers self-test: the allow-list entry was not honoured")
        ok = False
    print("check-layers self-test: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


def strip_comments_and_strings_keep_includes(text):
    """Comments out, strings kept (include names are strings)."""
    return re.sub(r'/\*.*?\*/', lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)


def strongly_connected(graph):
    """Tarjan's algorithm, iterative; returns a list of sets."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]
    nodes = set(graph)
    for outs in graph.values():
        nodes |= outs
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                out.append(comp)
    return out


if __name__ == "__main__":
    sys.exit(main(sys.argv))
