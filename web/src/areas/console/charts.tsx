import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';

/**
 * Bar charts of the console (Recharts: SVG drawn by React, only the parts used are bundled). Each chart
 * is a figure with a caption; the values are also given as a visually hidden list for screen readers.
 */
export function BarFigure({
  title,
  data,
  color = 'var(--chart-1)',
  layout = 'horizontal',
  format = String,
}: {
  title: string;
  data: Array<{ name: string; value: number }>;
  color?: string;
  layout?: 'horizontal' | 'vertical';
  format?: (v: number) => string;
}) {
  const vertical = layout === 'vertical';
  return (
    <figure className="chart card">
      <figcaption>{title}</figcaption>
      <div className="chart-box" aria-hidden="true">
        <ResponsiveContainer width="100%" height={vertical ? Math.max(120, data.length * 36 + 30) : 220}>
          <BarChart
            accessibilityLayer={false}
            data={data}
            layout={vertical ? 'vertical' : 'horizontal'}
            margin={{ top: 8, right: 16, bottom: 4, left: vertical ? 8 : 0 }}
          >
            <CartesianGrid strokeDasharray="3 3" stroke="var(--border)" />
            {vertical ? (
              <>
                <XAxis type="number" stroke="var(--muted)" fontSize={12} />
                <YAxis type="category" dataKey="name" width={130} stroke="var(--muted)" fontSize={12} />
              </>
            ) : (
              <>
                <XAxis dataKey="name" stroke="var(--muted)" fontSize={12} />
                <YAxis stroke="var(--muted)" fontSize={12} width={56} />
              </>
            )}
            <Tooltip
              cursor={{ fill: 'var(--accent-soft)' }}
              formatter={(v) => format(Number(v))}
              contentStyle={{ background: 'var(--surface)', border: '1px solid var(--border)', color: 'var(--text)' }}
            />
            <Bar dataKey="value" fill={color} maxBarSize={40} isAnimationActive={false} />
          </BarChart>
        </ResponsiveContainer>
      </div>
      <ul className="visually-hidden">
        {data.map((d) => (
          <li key={d.name}>
            {d.name}: {format(d.value)}
          </li>
        ))}
      </ul>
    </figure>
  );
}
