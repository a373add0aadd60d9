// PgClients.java -- the ten seed asks through pgjdbc (42.5, the driver
// Metabase uses) against straum-serve, each answer compared with
// PostgreSQL's own over the raw tables; then setTimestamp/setInt/setString
// parameters, getBigDecimal, an error by SQLSTATE, and DatabaseMetaData's
// getTables/getColumns against PostgreSQL's for the same views.
//
// usage: java -cp postgresql.jar PgClients.java STRAUM_PORT POSTGRES_HOST POSTGRES_PORT
//            POSTGRES_DB POSTGRES_USER ASKS_JSON
//
// pgjdbc binds parameters server-side (the extended protocol); after five
// executions of one PreparedStatement it switches to a named server
// statement (prepareThreshold), so each ask runs seven times. Rows compare
// as sets: BigDecimal by value (compareTo), timestamps as instants, the
// rest as their string. Run by tests/e2e/test_serve_pg.c.
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.*;
import java.util.*;
import java.util.regex.*;

public class PgClients {
    static String norm(Object v) {
        if (v == null) return "NULL";
        if (v instanceof BigDecimal) return "numeric:" + ((BigDecimal) v).stripTrailingZeros().toPlainString();
        if (v instanceof Timestamp) return "time:" + ((Timestamp) v).toInstant();
        return v.getClass().getSimpleName() + ":" + v;
    }

    static List<String> rows(ResultSet rs) throws SQLException {
        List<String> out = new ArrayList<>();
        int n = rs.getMetaData().getColumnCount();
        while (rs.next()) {
            StringBuilder b = new StringBuilder();
            for (int i = 1; i <= n; i++) b.append(norm(rs.getObject(i))).append('|');
            out.add(b.toString());
        }
        Collections.sort(out);
        return out;
    }

    static void fail(String m) {
        System.err.println(m);
        System.exit(1);
    }

    /* The ask file written by test_serve_pg.c: flat objects of strings and
       a string list; read with a pattern rather than a JSON library. */
    static List<String[]> readAsks(String path) throws Exception {
        String text = Files.readString(Path.of(path));
        Pattern p = Pattern.compile("\\{\"name\": \"((?:[^\"\\\\]|\\\\.)*)\", \"sql\": \"((?:[^\"\\\\]|\\\\.)*)\", "
                + "\"ask\": \"((?:[^\"\\\\]|\\\\.)*)\", \"params\": \\[([^\\]]*)\\]\\}");
        Matcher m = p.matcher(text);
        List<String[]> out = new ArrayList<>();
        while (m.find()) {
            List<String> a = new ArrayList<>();
            for (int g = 1; g <= 3; g++) a.add(m.group(g).replace("\\\"", "\"").replace("\\\\", "\\"));
            for (String s : m.group(4).split(",")) {
                s = s.trim();
                if (!s.isEmpty()) a.add(s.substring(1, s.length() - 1));
            }
            out.add(a.toArray(new String[0]));
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        Properties sp = new Properties();
        sp.setProperty("user", "metabase");
        sp.setProperty("sslmode", "disable");
        Connection st = DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + args[0] + "/straum", sp);
        Properties pp = new Properties();
        pp.setProperty("user", args[4]);
        Connection pg = DriverManager.getConnection("jdbc:postgresql://" + args[1] + ":" + args[2] + "/" + args[3], pp);
        for (Connection c : new Connection[] {pg, st})
            try (Statement s = c.createStatement()) { s.execute("SET TimeZone TO 'America/New_York'"); }
        List<String[]> asks = readAsks(args[5]);
        if (asks.size() != 10) fail("read " + asks.size() + " asks");
        for (String[] a : asks) {
            List<String> want;
            try (Statement s = pg.createStatement(); ResultSet rs = s.executeQuery(a[1])) { want = rows(rs); }
            /* $n into ?, the parameters in the order the $n appear. */
            List<String> order = new ArrayList<>();
            Matcher pm = Pattern.compile("\\$(\\d+)").matcher(a[2]);
            while (pm.find()) order.add(a[2 + Integer.parseInt(pm.group(1))]);
            try (PreparedStatement ps = st.prepareStatement(a[2].replaceAll("\\$\\d+", "?"))) {
                for (int round = 0; round < 7; round++) {
                    for (int i = 0; i < order.size(); i++) {
                        String v = order.get(i);
                        if (v.matches("\\d{4}-\\d\\d-\\d\\d"))
                            ps.setObject(i + 1, v, Types.OTHER); /* as the session zone reads it */
                        else if (v.matches("-?\\d+")) ps.setInt(i + 1, Integer.parseInt(v));
                        else ps.setString(i + 1, v);
                    }
                    try (ResultSet rs = ps.executeQuery()) {
                        List<String> got = rows(rs);
                        if (!got.equals(want)) fail(a[0] + " (round " + round + "): answers differ\n  postgres: " + want + "\n  straum:   " + got);
                    }
                }
            }
        }
        System.out.println("pgjdbc: 10 seed asks equal");
        /* setTimestamp: an instant, sent as timestamp (no zone) or
           timestamptz as pgjdbc chooses; getBigDecimal on a numeric sum. */
        try (PreparedStatement ps = st.prepareStatement(
                "SELECT trips, fare FROM trips WHERE bucket >= ? AND bucket < ? AND payment_type = ?")) {
            ps.setTimestamp(1, Timestamp.from(java.time.Instant.parse("2024-01-17T05:00:00Z")));
            ps.setTimestamp(2, Timestamp.from(java.time.Instant.parse("2024-01-18T05:00:00Z")));
            ps.setInt(3, 1);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) fail("setTimestamp: no row");
                long trips = rs.getLong(1);
                BigDecimal fare = rs.getBigDecimal(2);
                try (Statement s = pg.createStatement(); ResultSet w = s.executeQuery(
                        "SELECT count(*), sum(fare_amount) FROM yellow_trips WHERE payment_type = 1 "
                        + "AND pickup_at >= '2024-01-17 05:00Z' AND pickup_at < '2024-01-18 05:00Z'")) {
                    w.next();
                    if (w.getLong(1) != trips || (w.getBigDecimal(2) == null ? fare != null : w.getBigDecimal(2).compareTo(fare) != 0))
                        fail("setTimestamp: " + trips + " " + fare + ", PostgreSQL " + w.getLong(1) + " " + w.getBigDecimal(2));
                }
            }
        }
        try (Statement s = st.createStatement()) {
            s.executeQuery("SELECT trips FROM nosuch WHERE bucket >= '2024-01-01' AND bucket < '2024-02-01'");
            fail("no error");
        } catch (SQLException e) {
            if (!"42P01".equals(e.getSQLState())) fail("SQLSTATE " + e.getSQLState() + ": " + e);
        }
        System.out.println("pgjdbc: parameters and errors");
        /* DatabaseMetaData (pgjdbc's own catalog queries): the views, their
           columns and types, as PostgreSQL lists the same views. */
        DatabaseMetaData sm = st.getMetaData(), pm = pg.getMetaData();
        String[] views = {"VIEW"};
        List<String> wantT = fields(pm.getTables(null, "public", "%", views), TABLE_FIELDS);
        List<String> gotT = fields(sm.getTables(null, "public", "%", views), TABLE_FIELDS);
        if (wantT.size() != 2 || !gotT.equals(wantT)) fail("getTables:\n  postgres: " + wantT + "\n  straum:   " + gotT);
        gotT = fields(sm.getTables(null, null, null, null), TABLE_FIELDS);
        if (!gotT.equals(wantT)) fail("getTables(all): " + gotT);
        gotT = fields(sm.getTables(null, null, "%", new String[] {"TABLE"}), TABLE_FIELDS);
        if (!gotT.isEmpty()) fail("getTables(TABLE): " + gotT);
        for (String v : new String[] {"trips", "dropoffs"}) {
            List<String> want = fields(pm.getColumns(null, "public", v, "%"), COLUMN_FIELDS);
            List<String> got = fields(sm.getColumns(null, "public", v, "%"), COLUMN_FIELDS);
            if (want.size() < 5 || !got.equals(want)) fail("getColumns(" + v + "):\n  postgres: " + want + "\n  straum:   " + got);
        }
        List<String> want = fields(pm.getColumns(null, null, "trips", "fare"), COLUMN_FIELDS);
        List<String> got = fields(sm.getColumns(null, null, "trips", "fare"), COLUMN_FIELDS);
        if (want.size() != 1 || !got.equals(want)) fail("getColumns(trips, fare): " + got + ", PostgreSQL " + want);
        System.out.println("pgjdbc: metadata lists the views");
    }

    static final String[] TABLE_FIELDS = {"TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE", "REMARKS"};
    static final String[] COLUMN_FIELDS = {"TABLE_SCHEM", "TABLE_NAME", "COLUMN_NAME", "DATA_TYPE",
        "TYPE_NAME", "COLUMN_SIZE", "DECIMAL_DIGITS", "NULLABLE", "ORDINAL_POSITION", "IS_NULLABLE",
        "COLUMN_DEF", "IS_AUTOINCREMENT"};

    /* The named fields of each row, in the driver's order. */
    static List<String> fields(ResultSet rs, String[] names) throws SQLException {
        List<String> out = new ArrayList<>();
        while (rs.next()) {
            StringBuilder b = new StringBuilder();
            for (String n : names) b.append(rs.getString(n)).append('|');
            out.add(b.toString());
        }
        rs.close();
        return out;
    }
}
