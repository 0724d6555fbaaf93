import org.apache.avro.Schema;
import org.apache.avro.generic.*;
import org.apache.avro.io.*;
import java.io.*;
import java.util.*;

/** Avro Java as Flink reads: per stdin line "writer\treader\thex", prints "OK\tdatum" or "ERR\terror". */
public class Oracle {
  public static void main(String[] a) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    String line;
    while ((line = in.readLine()) != null) {
      String[] p = line.split("\t");
      try {
        Schema w = new Schema.Parser().parse(p[0]);
        Schema r = new Schema.Parser().parse(p[1]);
        byte[] b = HexFormat.of().parseHex(p.length > 2 ? p[2] : "");
        GenericDatumReader<Object> rd = new GenericDatumReader<>(w, r);
        BinaryDecoder d = DecoderFactory.get().binaryDecoder(b, null);
        Object o = rd.read(null, d);
        String extra = d.isEnd() ? "" : " (bytes left)";
        System.out.println("OK\t" + GenericData.get().toString(o) + extra);
      } catch (Throwable t) {
        System.out.println("ERR\t" + t.getClass().getName() + ": " + String.valueOf(t.getMessage()).replace("\n", " "));
      }
    }
  }
}
