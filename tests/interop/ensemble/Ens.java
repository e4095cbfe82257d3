// What the ensemble suite's two client programs (EnsembleSession, EnsembleCurator) share: the
// JSON-lines transcript, checks, and the line protocol with run.sh, which owns the members.
//
// stdout carries the transcript (one JSON object per line, keys sorted) and, on lines that
// start with "@", requests to the harness; each request gets exactly one line back on stdin:
//   @WHERE <sid hex>           -> "member=I mode=M" (the member holding that session) or "member=none"
//   @KILL_CONNECTED <sid hex>  -> "killed=I mode=M": kill -9 of the member holding that session
//   @KILL_LEADER               -> "killed=I mode=leader"
//   @RESTART                   -> "restarted=I,...": the killed members are back and following
//   @LIVE                      -> "127.0.0.1:P,..." client addresses of the members that run
//   @OTHER <sid hex>           -> "127.0.0.1:P" a running member that does not hold that session
//   @SETTLE <label>            -> "ok" once run.sh has compared the members' state (its own checks)
// Member numbers, modes and addresses never enter the transcript: they differ between runs.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.zookeeper.data.Stat;

public class Ens {
    static final BufferedReader IN = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    static int failures = 0;

    static String json(Object o) {
        StringBuilder sb = new StringBuilder();
        writeJson(sb, o);
        return sb.toString();
    }

    static void writeJson(StringBuilder sb, Object o) {
        if (o == null) {
            sb.append("null");
        } else if (o instanceof String) {
            writeString(sb, (String) o);
        } else if (o instanceof Boolean || o instanceof Integer || o instanceof Long) {
            sb.append(o.toString());
        } else if (o instanceof byte[]) {
            writeString(sb, bytes((byte[]) o));
        } else if (o instanceof Stat) {
            writeJson(sb, stat((Stat) o));
        } else if (o instanceof Map) {
            TreeMap<String, Object> m = new TreeMap<>();
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) m.put(String.valueOf(e.getKey()), e.getValue());
            sb.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> e : m.entrySet()) {
                if (!first) sb.append(", ");
                first = false;
                writeString(sb, e.getKey());
                sb.append(": ");
                writeJson(sb, e.getValue());
            }
            sb.append('}');
        } else if (o instanceof Iterable) {
            sb.append('[');
            boolean first = true;
            for (Object x : (Iterable<?>) o) {
                if (!first) sb.append(", ");
                first = false;
                writeJson(sb, x);
            }
            sb.append(']');
        } else {
            writeString(sb, o.toString());
        }
    }

    static void writeString(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20 || c > 0x7e) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
            }
        }
        sb.append('"');
    }

    static String bytes(byte[] b) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            StringBuilder sb = new StringBuilder("hex:");
            for (byte x : b) sb.append(String.format("%02x", x));
            return sb.toString();
        }
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    static Map<String, Object> stat(Stat s) {
        return map("czxid", s.getCzxid(), "mzxid", s.getMzxid(), "ctime", s.getCtime(), "mtime", s.getMtime(),
            "version", s.getVersion(), "cversion", s.getCversion(), "aversion", s.getAversion(),
            "ephemeralOwner", s.getEphemeralOwner(), "dataLength", s.getDataLength(),
            "numChildren", s.getNumChildren(), "pzxid", s.getPzxid());
    }

    static List<Object> sortedByText(List<?> l) {
        List<Object> r = new ArrayList<>(l);
        r.sort((a, b) -> json(a).compareTo(json(b)));
        return r;
    }

    /** Connection states in order, a run of the same state counted once: the Java client reports
     *  Disconnected again for every failed attempt to reconnect, and how many attempts fail
     *  depends on timing (which member it tries first), not on the server. */
    static List<String> collapse(List<String> states) {
        List<String> r = new ArrayList<>();
        for (String s : states) if (r.isEmpty() || !r.get(r.size() - 1).equals(s)) r.add(s);
        return r;
    }

    static synchronized void emit(String step, Object... kv) {
        Map<String, Object> m = map(kv);
        m.put("step", step);
        System.out.println(json(m));
        System.out.flush();
    }

    /** A check that run.sh prints as PASS or FAIL; it is part of the transcript too. */
    static boolean check(String name, boolean ok, Object detail) {
        if (!ok) failures++;
        emit("check", "check", name, "ok", ok, "detail", ok ? null : detail);
        if (!ok) System.err.println("CHECK FAILED " + name + ": " + json(detail));
        return ok;
    }

    static synchronized String ask(String request) throws Exception {
        System.out.println("@" + request);
        System.out.flush();
        String reply = IN.readLine();
        if (reply == null) throw new RuntimeException("the harness closed stdin (request " + request + ")");
        System.err.println("harness: " + request + " -> " + reply);
        return reply;
    }

    static String hex(long sid) {
        return "0x" + Long.toHexString(sid);
    }

    static List<String> list(String csv) {
        return csv.isEmpty() ? Collections.emptyList() : Arrays.asList(csv.split(","));
    }

    /** Gives up on a hung run and says where it hung. */
    static void watchdog(int secs) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(secs * 1000L);
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("WATCHDOG: no end after " + secs + "s; threads:");
            for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
                System.err.println("  " + e.getKey().getName());
                for (StackTraceElement s : e.getValue()) System.err.println("      at " + s);
            }
            Runtime.getRuntime().halt(3);
        }, "watchdog");
        t.setDaemon(true);
        t.start();
    }
}
